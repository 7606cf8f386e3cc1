// The one Python module-list parser (common/module_list.h: --preload,
// --elastic-preload, plugstack preload=). Invariants: it never crashes; every
// accepted name is non-empty and has no comma; an accepted list printed back
// parses to the same list; an error names the option and quotes the value
// (fuzz/fuzz_parser.h).
#include <cstdlib>
#include <string>
#include <vector>

#include "common/module_list.h"
#include "fuzz/fuzz_parser.h"

using namespace elastic;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto modules = fuzz::CheckParser<std::vector<std::string>>(text, ParseModuleList, FormatModuleList);
  if (modules) {
    for (const std::string& m : *modules) {
      if (m.empty() || m.find(',') != std::string::npos) std::abort();
    }
  }
  return 0;
}
