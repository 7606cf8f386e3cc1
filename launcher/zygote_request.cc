#include "launcher/zygote_request.h"

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

std::string Words(const std::vector<unsigned long>& words) {
  std::string out;
  for (unsigned long w : words) out += fmt::format("{}{:x}", out.empty() ? "" : ",", w);
  return out;
}

// Splits a payload into its NUL-terminated fields; false if the last is unterminated.
bool Fields(std::string_view payload, std::vector<std::string_view>* fields) {
  while (!payload.empty()) {
    size_t nul = payload.find('\0');
    if (nul == std::string_view::npos) return false;
    fields->push_back(payload.substr(0, nul));
    payload.remove_prefix(nul + 1);
  }
  return true;
}

bool ParsePid(std::string_view text, pid_t* pid, std::string* err) {
  long long n = 0;
  if (!ParseIntNamed("pid", std::string(text), 2, 0x3fffffff, &n, err)) return false;
  *pid = static_cast<pid_t>(n);
  return true;
}

}  // namespace

std::string EncodeSpawnRequest(const SpawnRequest& r) {
  std::string out;
  Put(&out, "spawn");
  Put(&out, r.module ? "module" : "script", r.target);
  for (const std::string& a : r.args) Put(&out, "arg", a);
  for (const std::string& e : r.env) Put(&out, "env", e);
  Put(&out, "cwd", r.cwd);
  Put(&out, "agent", std::to_string(r.agent));
  for (int sig : r.default_signals) Put(&out, "default_signal", std::to_string(sig));
  if (!r.cpu_mask.empty()) Put(&out, "cpu_mask", Words(r.cpu_mask));
  if (r.mem_mode >= 0) {
    Put(&out, "mem_mode", std::to_string(r.mem_mode));
    Put(&out, "mem_nodes", Words(r.mem_nodes));
    Put(&out, "maxnode", std::to_string(r.maxnode));
    if (r.fallback_mode >= 0) {
      Put(&out, "fallback_mode", std::to_string(r.fallback_mode));
      Put(&out, "fallback_nodes", Words(r.fallback_nodes));
    }
  }
  return out;
}

std::string FrameHeader(size_t size) {
  std::string h(4, '\0');
  for (int i = 0; i < 4; ++i) h[i] = static_cast<char>((size >> (8 * i)) & 0xff);
  return h;
}

bool ParseFrameHeader(std::string_view header, size_t* size, std::string* err) {
  if (header.size() != 4) {
    *err = fmt::format("zygote frame header of {} bytes (4 expected)", header.size());
    return false;
  }
  size_t n = 0;
  for (int i = 3; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(header[i]);
  if (n > kMaxZygoteFrame) {
    *err = fmt::format("zygote frame of {} bytes (at most {})", n, kMaxZygoteFrame);
    return false;
  }
  *size = n;
  return true;
}

bool ParseZygoteReply(std::string_view payload, ZygoteReply* reply, std::string* err) {
  std::vector<std::string_view> f;
  if (!Fields(payload, &f) || f.empty()) {
    *err = fmt::format("zygote reply '{}': not NUL-terminated fields", EscapeForLog(payload.substr(0, 80)));
    return false;
  }
  if (f.size() % 2 != 1) {
    *err = fmt::format("zygote reply '{}': a key without a value", EscapeForLog(f[0]));
    return false;
  }
  ZygoteReply r;
  std::string_view kind = f[0];
  if (kind == "ready") r.kind = ZygoteReplyKind::kReady;
  else if (kind == "unfit") r.kind = ZygoteReplyKind::kUnfit;
  else if (kind == "spawned") r.kind = ZygoteReplyKind::kSpawned;
  else if (kind == "error") r.kind = ZygoteReplyKind::kError;
  else {
    *err = fmt::format("zygote reply of unknown kind '{}'", EscapeForLog(kind));
    return false;
  }
  bool has_pid = false;
  for (size_t i = 1; i < f.size(); i += 2) {
    std::string_view key = f[i], value = f[i + 1];
    if (key == "pid") {
      if (!ParsePid(value, &r.pid, err)) return false;
      has_pid = true;
    } else if (key == "reason") {
      r.reason = value;
    } else if (key == "modules") {
      r.modules = value;
    } else {
      *err = fmt::format("zygote reply '{}': unknown key '{}'", kind, EscapeForLog(key));
      return false;
    }
  }
  bool needs_pid = r.kind == ZygoteReplyKind::kReady || r.kind == ZygoteReplyKind::kSpawned;
  if (needs_pid && !has_pid) {
    *err = fmt::format("zygote reply '{}' without a pid", kind);
    return false;
  }
  if (!needs_pid && r.reason.empty()) {
    *err = fmt::format("zygote reply '{}' without a reason", kind);
    return false;
  }
  *reply = std::move(r);
  return true;
}

}  // namespace elastic
