// The one --nproc-per-node parser (common/nproc_spec.h). Invariants: it never
// crashes; an accepted count is in 1..kMaxNproc; an accepted value printed back
// parses to the same value (leading zeros are allowed, so the text may differ);
// an error names the option and quotes the value.
#include <cstdlib>
#include <string>

#include "common/nproc_spec.h"

using namespace elastic;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  NprocSpec spec;
  std::string err;
  if (!ParseNprocSpec("OPT", text, &spec, &err)) {
    if (err.rfind("OPT: '" + text + "'", 0) != 0) std::abort();
    return 0;
  }
  if (spec.kind == NprocSpec::Kind::kCount && (spec.count < 1 || spec.count > kMaxNproc)) std::abort();
  NprocSpec again;
  if (!ParseNprocSpec("OPT", FormatNprocSpec(spec), &again, &err) || !(again == spec)) std::abort();
  return 0;
}
