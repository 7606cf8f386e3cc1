#include "launcher/hung_worker.h"

#include <fmt/format.h>

#include "common/log_escape.h"

namespace elastic {

std::string ExtractPythonStacks(const std::string& text) {
  for (const char* marker : {"Fatal Python error", "Thread 0x", "Current thread 0x"}) {
    size_t at = text.find(marker);
    if (at == std::string::npos) continue;
    // From the start of that line.
    size_t line = text.rfind('\n', at);
    return text.substr(line == std::string::npos ? 0 : line + 1);
  }
  return text;
}

std::string FormatHangMessage(const HangInfo& hang, bool have_stacks) {
  std::string out = fmt::format("hung: FileTimerClient timer '{}' expired {:.1f} s ago (pid {})",
                                EscapeForLog(hang.timer.scope_id, 200), hang.overdue_s, hang.timer.pid);
  if (have_stacks) {
    out += fmt::format("; Python stacks collected with SIGABRT: {}", hang.stacks_path);
  } else {
    out += "; no Python stacks (run the worker with PYTHONFAULTHANDLER=1)";
  }
  if (hang.native_tool.empty()) return out;
  if (hang.native_problem.empty()) {
    out += fmt::format("; native frames ({}): {}", hang.native_tool, hang.native_path);
  } else {
    out += fmt::format("; native frames: {} failed ({}): {}", hang.native_tool, hang.native_problem,
                       hang.native_path);
  }
  return out;
}

std::string TimerFilePath(const std::string& user_path, const std::string& private_dir) {
  return user_path.empty() ? private_dir + "/watchdog_timer" : user_path;
}

}  // namespace elastic
