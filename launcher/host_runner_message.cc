#include "launcher/host_runner_message.h"

#include <fmt/format.h>

#include "common/log_escape.h"
#include "common/parse.h"

namespace elastic {
namespace {

void Put(std::string* out, std::string_view field) {
  out->append(field);
  out->push_back('\0');
}

void Put(std::string* out, std::string_view key, std::string_view value) {
  Put(out, key);
  Put(out, value);
}

// The NUL-terminated fields of a message: the kind, then key/value pairs.
bool Fields(std::string_view payload, std::string_view what, std::vector<std::string_view>* fields,
            std::string* err) {
  if (payload.size() > kMaxHostRunnerMessage) {
    *err = fmt::format("{} of {} bytes (at most {})", what, payload.size(), kMaxHostRunnerMessage);
    return false;
  }
  while (!payload.empty()) {
    size_t nul = payload.find('\0');
    if (nul == std::string_view::npos) {
      *err = fmt::format("{} '{}': not NUL-terminated fields", what, EscapeForLog(payload.substr(0, 80)));
      return false;
    }
    fields->push_back(payload.substr(0, nul));
    payload.remove_prefix(nul + 1);
  }
  if (fields->empty()) {
    *err = fmt::format("empty {}", what);
    return false;
  }
  if (fields->size() % 2 != 1) {
    *err = fmt::format("{} '{}': a key without a value", what, EscapeForLog((*fields)[0]));
    return false;
  }
  return true;
}

bool ParseId(std::string_view text, uint64_t* id, std::string* err) {
  long long n = 0;
  if (!ParseIntNamed("id", std::string(text), 1, (1LL << 53), &n, err)) return false;
  *id = static_cast<uint64_t>(n);
  return true;
}

bool ParseNumber(std::string_view key, std::string_view text, long long min, long long max, long long* out,
                 std::string* err) {
  return ParseIntNamed(key, std::string(text), min, max, out, err);
}

}  // namespace

std::string EncodeHostRequest(const HostRequest& r) {
  std::string out;
  if (r.kind == HostRequestKind::kCancel) {
    Put(&out, "cancel");
    Put(&out, "id", std::to_string(r.id));
    return out;
  }
  Put(&out, "run");
  Put(&out, "id", std::to_string(r.id));
  Put(&out, "command", r.command);
  Put(&out, "timeout_ms", std::to_string(r.timeout_ms));
  for (const std::string& e : r.env) Put(&out, "env", e);
  return out;
}

bool ParseHostRequest(std::string_view payload, HostRequest* request, std::string* err) {
  std::vector<std::string_view> f;
  if (!Fields(payload, "host runner request", &f, err)) return false;
  HostRequest r;
  std::string_view kind = f[0];
  if (kind == "run") {
    r.kind = HostRequestKind::kRun;
  } else if (kind == "cancel") {
    r.kind = HostRequestKind::kCancel;
  } else {
    *err = fmt::format("host runner request of unknown kind '{}'", EscapeForLog(kind));
    return false;
  }
  bool has_id = false, has_command = false, has_timeout = false;
  for (size_t i = 1; i < f.size(); i += 2) {
    std::string_view key = f[i], value = f[i + 1];
    long long n = 0;
    if (key == "id") {
      if (!ParseId(value, &r.id, err)) return false;
      has_id = true;
    } else if (key == "command" && r.kind == HostRequestKind::kRun) {
      r.command = value;
      has_command = true;
    } else if (key == "timeout_ms" && r.kind == HostRequestKind::kRun) {
      if (!ParseNumber("timeout_ms", value, 1, kMaxHostRunTimeoutMs, &n, err)) return false;
      r.timeout_ms = n;
      has_timeout = true;
    } else if (key == "env" && r.kind == HostRequestKind::kRun) {
      if (value.find('=') == std::string_view::npos || value.front() == '=') {
        *err = fmt::format("host runner request: env '{}' is not KEY=VALUE", EscapeForLog(value, 80));
        return false;
      }
      r.env.emplace_back(value);
    } else {
      *err = fmt::format("host runner request '{}': unknown key '{}'", kind, EscapeForLog(key));
      return false;
    }
  }
  if (!has_id) {
    *err = fmt::format("host runner request '{}' without an id", kind);
    return false;
  }
  if (r.kind == HostRequestKind::kRun && (!has_command || r.command.empty() || !has_timeout)) {
    *err = "host runner request 'run' without a command or a timeout_ms";
    return false;
  }
  *request = std::move(r);
  return true;
}

std::string EncodeHostReply(const HostReply& r) {
  std::string out;
  if (r.kind == HostReplyKind::kError) {
    Put(&out, "error");
    Put(&out, "id", std::to_string(r.id));
    Put(&out, "reason", r.reason);
    return out;
  }
  Put(&out, "done");
  Put(&out, "id", std::to_string(r.id));
  if (r.signal != 0) Put(&out, "signal", std::to_string(r.signal));
  else Put(&out, "exit_code", std::to_string(r.exit_code));
  Put(&out, "timed_out", r.timed_out ? "1" : "0");
  return out;
}

bool ParseHostReply(std::string_view payload, HostReply* reply, std::string* err) {
  std::vector<std::string_view> f;
  if (!Fields(payload, "host runner reply", &f, err)) return false;
  HostReply r;
  std::string_view kind = f[0];
  if (kind == "done") {
    r.kind = HostReplyKind::kDone;
  } else if (kind == "error") {
    r.kind = HostReplyKind::kError;
  } else {
    *err = fmt::format("host runner reply of unknown kind '{}'", EscapeForLog(kind));
    return false;
  }
  bool has_id = false, has_end = false;
  for (size_t i = 1; i < f.size(); i += 2) {
    std::string_view key = f[i], value = f[i + 1];
    long long n = 0;
    if (key == "id") {
      if (!ParseId(value, &r.id, err)) return false;
      has_id = true;
    } else if (key == "exit_code" && r.kind == HostReplyKind::kDone && !has_end) {
      if (!ParseNumber("exit_code", value, 0, 255, &n, err)) return false;
      r.exit_code = static_cast<int>(n);
      has_end = true;
    } else if (key == "signal" && r.kind == HostReplyKind::kDone && !has_end) {
      if (!ParseNumber("signal", value, 1, 64, &n, err)) return false;
      r.signal = static_cast<int>(n);
      has_end = true;
    } else if (key == "timed_out" && r.kind == HostReplyKind::kDone) {
      if (value != "0" && value != "1") {
        *err = fmt::format("host runner reply: timed_out '{}' (0 or 1)", EscapeForLog(value, 20));
        return false;
      }
      r.timed_out = value == "1";
    } else if (key == "reason" && r.kind == HostReplyKind::kError) {
      r.reason = value;
    } else {
      *err = fmt::format("host runner reply '{}': unknown or repeated key '{}'", kind, EscapeForLog(key));
      return false;
    }
  }
  if (!has_id) {
    *err = fmt::format("host runner reply '{}' without an id", kind);
    return false;
  }
  if (r.kind == HostReplyKind::kDone && !has_end) {
    *err = "host runner reply 'done' without an exit_code or a signal";
    return false;
  }
  if (r.kind == HostReplyKind::kError && r.reason.empty()) {
    *err = "host runner reply 'error' without a reason";
    return false;
  }
  *reply = std::move(r);
  return true;
}

}  // namespace elastic
