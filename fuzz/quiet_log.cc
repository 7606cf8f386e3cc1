// common/log.h for the store server's fuzz target: lines are dropped. Every
// run starts a new server, whose rate limiter lets its first warnings through,
// so the real log would print thousands of lines per second of fuzzing;
// sanitizer and libFuzzer reports do not go through it.
#include "common/log.h"

namespace elastic {

void SetLogProgram(std::string) {}
void SetLogVerbose(bool) {}
bool LogVerbose() { return false; }
void LogLine(LogLevel, const std::string&) {}

}  // namespace elastic
