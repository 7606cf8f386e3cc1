#include "launcher/grow_rule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace elastic {

namespace {

bool AllDigits(std::string_view s) {
  return !s.empty() && s.size() <= 12 &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

Millis GrowBackoff(int failures, const GrowSettings& settings) {
  if (failures <= 0) return Millis(0);
  Millis delay = settings.backoff_min;
  for (int i = 1; i < failures && delay < settings.backoff_max; ++i) delay *= 2;
  return std::min(delay, settings.backoff_max);
}

GrowDecision DecideGrow(const GrowView& view, MonoClock::time_point now, const GrowSettings& settings) {
  GrowDecision d;
  int missing = std::max(0, view.max_nodes - view.world_nodes - view.starting);
  if (view.pending > missing) {
    d.cancel = view.pending - missing;
    return d;
  }
  if (view.pending == missing) return d;
  if (view.last_failure) {
    MonoClock::time_point due = *view.last_failure + GrowBackoff(view.failures, settings);
    if (now < due) {
      d.retry_at = due;
      return d;
    }
  }
  d.submit = 1;
  return d;
}

bool ParseHelperJobs(std::string_view text, std::vector<HelperJob>* out, std::string* err) {
  std::vector<HelperJob> jobs;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = Trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.empty()) continue;
    size_t sp = line.find(' ');
    std::string_view id = line.substr(0, sp);
    std::string_view state = sp == std::string_view::npos ? std::string_view() : Trim(line.substr(sp + 1));
    if (!AllDigits(id) || state.empty() || state.find(' ') != std::string_view::npos) {
      *err = fmt::format("squeue: '{}' is not 'JOBID STATE'", line);
      return false;
    }
    jobs.push_back({std::string(id), std::string(state)});
  }
  *out = std::move(jobs);
  return true;
}

bool ParseSbatchJobId(std::string_view text, std::string* id) {
  text = Trim(text);
  std::string_view first = text.substr(0, text.find(';'));
  if (!AllDigits(first) || text.find('\n') != std::string_view::npos) return false;
  *id = std::string(first);
  return true;
}

}  // namespace elastic
