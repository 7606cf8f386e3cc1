// The one --nproc-per-node parser (common/nproc_spec.h). Invariants: it never
// crashes; an accepted count is in 1..kMaxNproc; an accepted value printed back
// parses to the same value (leading zeros are allowed, so the text may differ);
// an error names the option and quotes the value (fuzz/fuzz_parser.h).
#include <cstdlib>
#include <string>

#include "common/nproc_spec.h"
#include "fuzz/fuzz_parser.h"

using namespace elastic;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto spec = fuzz::CheckParser<NprocSpec>(text, ParseNprocSpec, FormatNprocSpec);
  if (spec && spec->kind == NprocSpec::Kind::kCount && (spec->count < 1 || spec->count > kMaxNproc)) {
    std::abort();
  }
  return 0;
}
