// Agent log lines on stderr: "<program>: <level>: message". One place so every
// component prints the same way.
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <functional>
#include <string>

namespace elastic {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

void SetLogProgram(std::string name);
void SetLogVerbose(bool verbose);
bool LogVerbose();
void LogLine(LogLevel level, const std::string& message);
// Where log lines go instead of a write(2) to stderr: the agent queues them with
// its workers' output so that a full stderr never stops its loop (launcher/console.h).
// An empty function restores the write.
void SetLogSink(std::function<void(const std::string& line)> sink);
// A rewrite of every message before it is written (elasticrun under srun names
// srun's options: launcher/srun_names.h). An empty function: none.
void SetLogRewrite(std::function<std::string(const std::string& message)> rewrite);

template <typename... Args>
void Log(LogLevel level, fmt::format_string<Args...> f, Args&&... args) {
  if (level == LogLevel::kDebug && !LogVerbose()) return;
  LogLine(level, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace elastic
