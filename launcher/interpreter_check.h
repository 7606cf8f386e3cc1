// A python without torch (python3 on PATH, a wrong venv) made every worker fail
// with ModuleNotFoundError, burnt the restarts and ended as a "crash loop". One
// check before the rendezvous: when the script imports torch, the interpreter
// must be able to find it (importlib's find_spec: no import, ~30 ms).
#pragma once

#include <string>
#include <string_view>


namespace elastic {

// True when Python source `text` has a top-level `import torch...` or `from
// torch... import` statement (a line starting with it, not indented: an indented
// one may be inside try/except ImportError).
bool SourceImportsTorch(std::string_view text);

// Runs before the rendezvous (never on the event loop): false with `err` set when
// `script` (a .py file) imports torch and `python` (the resolved interpreter)
// cannot find it. `by_option`: the interpreter is --python's (`elasticrun
// train.py`); else the program is itself a python (`srun --elastic python3
// train.py`, `elasticrun --no-python python3 train.py`) and the message says so.
// Anything it cannot tell (an unreadable script, an interpreter that does not
// answer within `timeout_ms`) passes.
bool CheckInterpreterHasTorch(const std::string& script, const std::string& python, bool by_option,
                              long long timeout_ms, std::string* err);

}  // namespace elastic
