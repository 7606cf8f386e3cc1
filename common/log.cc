#include "common/log.h"

#include <unistd.h>

namespace elastic {
namespace {
std::string g_program = "elasticrun";
bool g_verbose = false;
std::function<void(const std::string&)> g_sink;
std::function<std::string(const std::string&)> g_rewrite;
}  // namespace

void SetLogProgram(std::string name) { g_program = std::move(name); }
void SetLogVerbose(bool verbose) { g_verbose = verbose; }
bool LogVerbose() { return g_verbose; }
void SetLogSink(std::function<void(const std::string&)> sink) { g_sink = std::move(sink); }
void SetLogRewrite(std::function<std::string(const std::string&)> rewrite) {
  g_rewrite = std::move(rewrite);
}

void LogLine(LogLevel level, const std::string& message) {
  const char* tag = level == LogLevel::kError ? "error: " : level == LogLevel::kWarning ? "warning: " : "";
  std::string line =
      fmt::format("{}: {}{}\n", g_program, tag, g_rewrite ? g_rewrite(message) : message);
  if (g_sink) {
    g_sink(line);
    return;
  }
  // One write(2) per line so lines from several processes never interleave mid-line.
  ssize_t unused = write(STDERR_FILENO, line.data(), line.size());
  (void)unused;
}

}  // namespace elastic
