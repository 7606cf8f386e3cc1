// The one --bind/--membind parser (common/bind_mode.h). Invariants: it never
// crashes; an accepted value printed back is the input itself; an error names
// the option and quotes the value.
#include <cstdlib>
#include <string>

#include "common/bind_mode.h"

using namespace elastic;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::string err;
  BindMode mode;
  if (ParseBindMode("OPT", text, &mode, &err)) {
    if (BindModeName(mode) != text) std::abort();
  } else if (err.rfind("OPT: '" + text + "'", 0) != 0) {
    std::abort();
  }
  MemBind membind;
  if (ParseMemBind("OPT", text, &membind, &err)) {
    if (MemBindName(membind) != text) std::abort();
  } else if (err.rfind("OPT: '" + text + "'", 0) != 0) {
    std::abort();
  }
  return 0;
}
