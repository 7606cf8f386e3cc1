// Agent log lines on stderr: "<program>: <level>: message". One place so every
// component prints the same way.
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <string>

namespace elastic {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

void SetLogProgram(std::string name);
void SetLogVerbose(bool verbose);
bool LogVerbose();
void LogLine(LogLevel level, const std::string& message);

template <typename... Args>
void Log(LogLevel level, fmt::format_string<Args...> f, Args&&... args) {
  if (level == LogLevel::kDebug && !LogVerbose()) return;
  LogLine(level, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace elastic
