// A python without torch (python3 on PATH, a wrong venv) made every worker fail
// with ModuleNotFoundError, burnt the restarts and ended as a "crash loop". One
// check before the rendezvous: when the script imports torch, the interpreter
// must be able to find it (importlib's find_spec: no import, ~30 ms).
#pragma once

#include <string>
#include <string_view>

#include "launcher/launch_config.h"

namespace elastic {

// True when Python source `text` has a top-level `import torch...` or `from
// torch... import` statement (a line starting with it, not indented: an indented
// one may be inside try/except ImportError).
bool SourceImportsTorch(std::string_view text);

// Runs before the rendezvous (never on the event loop): false with `err` set when
// the program is a .py script that imports torch and `python` (the resolved
// interpreter) cannot find torch. Anything it cannot tell (an unreadable script,
// an interpreter that does not answer within a few seconds) passes.
bool CheckInterpreterHasTorch(const LaunchConfig& config, const std::string& python,
                              std::string* err);

}  // namespace elastic
