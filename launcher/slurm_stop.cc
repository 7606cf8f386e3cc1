#include "launcher/slurm_stop.h"

#include <charconv>
#include <ctime>

#include <fmt/format.h>

namespace elastic {

namespace {
constexpr int64_t kClockSkewSeconds = 5;

std::string UtcClock(int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:02}:{:02}:{:02} UTC", tm.tm_hour, tm.tm_min, tm.tm_sec);
}
}  // namespace

std::optional<int64_t> ParseJobEndTime(const std::string& text) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value <= 0) return std::nullopt;
  return value;
}

bool AtJobEnd(std::optional<int64_t> job_end_time, int64_t now) {
  return job_end_time && now + kClockSkewSeconds >= *job_end_time;
}

std::string SlurmStopLine(std::optional<int64_t> job_end_time, int64_t now) {
  if (AtJobEnd(job_end_time, now))
    return fmt::format("time limit: the job reached its time limit (--time, it ended at {}) and "
                       "Slurm stops the step (SIGTERM): stopping the workers",
                       UtcClock(*job_end_time));
  return "cancelled by Slurm (SIGTERM): stopping the workers";
}

}  // namespace elastic
