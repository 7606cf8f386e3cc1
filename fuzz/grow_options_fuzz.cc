// --elastic-grow's OPTIONS (common/grow_options.h). Invariants: it never crashes;
// accepted options print back to the same options, and their sbatch words are
// plain (no character /bin/sh would read: the keeper quotes them anyway); an
// error names the option and the whole value.
#include <cstdlib>
#include <string>

#include "common/grow_options.h"

using namespace elastic;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  GrowOptions o;
  std::string err;
  if (!ParseGrowOptions("OPT", text, &o, &err)) {
    if (err.rfind("OPT=" + text + ": ", 0) != 0) std::abort();
    return 0;
  }
  GrowOptions again;
  if (!ParseGrowOptions("OPT", FormatGrowOptions(o), &again, &err) || !(again == o)) std::abort();
  for (const auto& word : GrowSbatchArgs(o))
    if (word.find_first_of(" \t\n'\"$`\\;&|<>()*?") != std::string::npos) std::abort();
  return 0;
}
