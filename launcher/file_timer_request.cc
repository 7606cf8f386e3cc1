#include "launcher/file_timer_request.h"

#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/log_escape.h"

namespace elastic {
namespace {

using nlohmann::json;

bool Field(const json& doc, const char* name, const json** out, std::string* err) {
  auto it = doc.find(name);
  if (it == doc.end()) {
    *err = fmt::format("timer request without \"{}\"", name);
    return false;
  }
  *out = &*it;
  return true;
}

bool IntField(const json& doc, const char* name, long long lo, long long hi, long long* out,
              std::string* err) {
  const json* v = nullptr;
  if (!Field(doc, name, &v, err)) return false;
  if (!v->is_number_integer()) {
    *err = fmt::format("timer request: \"{}\" is {}, not an integer", name,
                       EscapeForLog(v->dump(), 64));
    return false;
  }
  long long n = v->is_number_unsigned() && v->get<unsigned long long>() > static_cast<unsigned long long>(hi)
                    ? hi + 1
                    : v->get<long long>();
  if (n < lo || n > hi) {
    *err = fmt::format("timer request: \"{}\" is {}, not in [{}, {}]", name, EscapeForLog(v->dump(), 64),
                       lo, hi);
    return false;
  }
  *out = n;
  return true;
}

}  // namespace

bool ParseFileTimerRequest(std::string_view line, FileTimerRequest* out, std::string* err) {
  if (line.size() > kMaxFileTimerRequest) {
    *err = fmt::format("timer request of {} bytes, over the limit of {} (PIPE_BUF)", line.size(),
                       kMaxFileTimerRequest);
    return false;
  }
  json doc = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    *err = fmt::format("timer request is not a JSON object: '{}'", EscapeForLog(line, 128));
    return false;
  }
  FileTimerRequest r;
  long long n = 0;
  // FileTimerServer ignores "version"; every client so far sends 1. Missing is accepted.
  if (doc.contains("version")) {
    if (!IntField(doc, "version", 1, 1, &n, err)) return false;
  }
  if (!IntField(doc, "pid", 1, 0x7fffffff, &n, err)) return false;
  r.pid = static_cast<pid_t>(n);
  const json* v = nullptr;
  if (!Field(doc, "scope_id", &v, err)) return false;
  if (!v->is_string()) {
    *err = fmt::format("timer request: \"scope_id\" is {}, not a string", EscapeForLog(v->dump(), 64));
    return false;
  }
  r.scope_id = v->get<std::string>();
  if (!Field(doc, "expiration_time", &v, err)) return false;
  if (!v->is_number() || !std::isfinite(v->get<double>())) {
    *err = fmt::format("timer request: \"expiration_time\" is {}, not a number of seconds",
                       EscapeForLog(v->dump(), 64));
    return false;
  }
  r.expiration_time = v->get<double>();
  if (!IntField(doc, "signal", -64, 64, &n, err)) return false;
  r.signal = static_cast<int>(n);
  *out = std::move(r);
  return true;
}

TimerTable::Applied TimerTable::Apply(const FileTimerRequest& request) {
  auto key = std::make_pair(request.pid, request.scope_id);
  if (request.release()) return timers_.erase(key) > 0 ? Applied::kReleased : Applied::kNotHeld;
  auto it = timers_.find(key);
  if (it == timers_.end() && timers_.size() >= max_timers_) return Applied::kFull;
  timers_[key] = Timer{request.expiration_time, request.signal};
  return Applied::kSet;
}

std::optional<double> TimerTable::Earliest() const {
  std::optional<double> earliest;
  for (const auto& [key, t] : timers_) {
    if (!earliest || t.expiration_time < *earliest) earliest = t.expiration_time;
  }
  return earliest;
}

std::vector<ExpiredTimer> TimerTable::TakeExpired(double now) {
  std::map<pid_t, ExpiredTimer> by_pid;
  std::map<pid_t, bool> with_signal;
  for (const auto& [key, t] : timers_) {
    if (t.expiration_time > now) continue;
    pid_t pid = key.first;
    auto [it, fresh] = by_pid.try_emplace(pid, ExpiredTimer{pid, key.second, t.expiration_time, t.signal});
    bool had = with_signal[pid];
    bool has = t.signal > 0;
    // The earliest timer that asks for a signal wins; without one, the earliest.
    if (fresh) {
      with_signal[pid] = has;
    } else if ((has && !had) || (has == had && t.expiration_time < it->second.expiration_time)) {
      it->second = ExpiredTimer{pid, key.second, t.expiration_time, t.signal};
      with_signal[pid] = has;
    }
  }
  std::vector<ExpiredTimer> out;
  for (auto& [pid, e] : by_pid) {
    if (!with_signal[pid]) e.signal = 0;
    ErasePid(pid);
    out.push_back(std::move(e));
  }
  return out;
}

void TimerTable::ErasePid(pid_t pid) {
  for (auto it = timers_.begin(); it != timers_.end();) {
    it = it->first.first == pid ? timers_.erase(it) : std::next(it);
  }
}

}  // namespace elastic
