// The one --bind/--membind parser (common/bind_mode.h). Invariants: it never
// crashes; an accepted value printed back is the input itself (one spelling
// per value); an error names the option and quotes the value
// (fuzz/fuzz_parser.h).
#include <cstdlib>
#include <string>

#include "common/bind_mode.h"
#include "fuzz/fuzz_parser.h"

using namespace elastic;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto mode = fuzz::CheckParser<BindMode>(text, ParseBindMode, BindModeName);
  if (mode && BindModeName(*mode) != text) std::abort();
  auto membind = fuzz::CheckParser<MemBind>(text, ParseMemBind, MemBindName);
  if (membind && MemBindName(*membind) != text) std::abort();
  return 0;
}
