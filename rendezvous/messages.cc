#include "rendezvous/messages.h"

#include <fmt/format.h>

#include <utility>

#include "common/endpoint.h"
#include "common/log_escape.h"
#include "common/name_table.h"
#include "rendezvous/frame.h"

namespace elastic {

using nlohmann::json;

namespace {

constexpr int64_t kMaxCount = 1 << 30;     // ranks, sizes, rounds: anything past this is garbage
constexpr size_t kMaxNonceBytes = 128;
constexpr size_t kMaxStandByBytes = 512;   // join's standby: one console line

bool Fail(std::string* err, std::string message) {
  if (err) *err = std::move(message);
  return false;
}

bool GetIntIn(const json& j, const char* key, int64_t min, int64_t max, int64_t* out,
              std::string* err) {
  if (!GetInt(j, key, out, err)) return false;
  if (*out < min || *out > max)
    return Fail(err, fmt::format("field '{}' = {} is out of range [{}, {}]", key, *out, min, max));
  return true;
}

bool GetBoolOr(const json& j, const char* key, bool fallback, bool* out, std::string* err) {
  auto it = j.find(key);
  if (it == j.end()) return *out = fallback, true;
  if (!it->is_boolean()) return Fail(err, fmt::format("field '{}' is not a boolean", key));
  *out = it->get<bool>();
  return true;
}

bool GetIntOr(const json& j, const char* key, int64_t fallback, int64_t min, int64_t max,
              int64_t* out, std::string* err) {
  if (j.find(key) == j.end()) return *out = fallback, true;
  return GetIntIn(j, key, min, max, out, err);
}

// An optional text field: absent is "", present must be a string.
bool GetTextOr(const json& j, const char* key, std::string* out, std::string* err) {
  auto it = j.find(key);
  if (it == j.end()) return out->clear(), true;
  return GetString(j, key, out, err);
}

// Names and run ids are printed and compared: printable ASCII only, bounded.
bool GetName(const json& j, const char* key, std::string* out, std::string* err) {
  if (!GetString(j, key, out, err)) return false;
  return CheckProtocolName(fmt::format("field '{}'", key), *out, err);
}

// MASTER_ADDR of every worker: a host as --rdzv-endpoint reads it, nothing else
// (a newline or an escape sequence from the wire must not reach the workers).
bool GetStoreAddr(const json& j, std::string* out, std::string* err) {
  if (!GetString(j, "store_addr", out, err)) return false;
  if (IsValidHost(*out)) return true;
  return Fail(err, fmt::format("field 'store_addr' = '{}' is not a host name or address",
                               EscapeForLog(*out)));
}

bool GetNonce(const json& j, const char* key, std::string* out, std::string* err) {
  if (!GetString(j, key, out, err)) return false;
  if (out->size() < 32 || out->size() > kMaxNonceBytes ||
      out->find_first_not_of("0123456789abcdef") != std::string::npos)
    return Fail(err, fmt::format("field '{}' is not a hex nonce of 32 to {} digits", key,
                                 kMaxNonceBytes));
  return true;
}

// An optional regime id (RoundInfo::regime): a hex nonce, or "" when absent.
bool GetRegimeOr(const json& j, std::string* out, std::string* err) {
  out->clear();
  if (j.find("regime") == j.end()) return true;
  return GetNonce(j, "regime", out, err);
}

bool DecodeChallenge(const json& j, ChallengeMsg* c, std::string* err) {
  if (!GetInt(j, "version", &c->version, err) || !GetName(j, "run_id", &c->run_id, err) ||
      !GetNonce(j, "nonce", &c->nonce, err) || !GetString(j, "auth", &c->auth, err))
    return false;
  int64_t round = 0;
  if (!GetIntOr(j, "round", 0, 0, INT64_MAX, &round, err) ||
      !GetIntOr(j, "last_completed", -1, -1, INT64_MAX, &c->last_completed, err) ||
      !GetRegimeOr(j, &c->regime, err))
    return false;
  c->round = static_cast<uint64_t>(round);
  if (c->auth != "none" && c->auth != "token" && c->auth != "munge")
    return Fail(err, fmt::format("field 'auth' = '{}' is not none, token or munge",
                                 EscapeForLog(c->auth)));
  return true;
}

bool DecodeWelcome(const json& j, WelcomeMsg* w, std::string* err) {
  return GetIntIn(j, "node_id", 0, INT64_MAX, &w->node_id, err) &&
         GetString(j, "proof", &w->proof, err);
}

bool DecodeRestart(const json& j, RestartMsg* r, std::string* err) {
  int64_t round = 0, used = -1;
  if (!GetIntIn(j, "round", 0, INT64_MAX, &round, err) || !GetTextOr(j, "reason", &r->reason, err) ||
      !GetIntOr(j, "restarts_used", -1, 0, kMaxCount, &used, err) ||
      !GetBoolOr(j, "worker_failed", false, &r->worker_failed, err))
    return false;
  r->round = static_cast<uint64_t>(round);
  r->restarts_used = static_cast<int>(used);
  return true;
}

// Optional: absent, or a name this agent does not know (a later release), is kUnknown.
bool GetEndReason(const json& j, EndReason* out, std::string* err) {
  std::string name;
  if (!GetTextOr(j, "end_reason", &name, err)) return false;
  if (!ParseEndReason(name, out)) *out = EndReason::kUnknown;
  return true;
}

bool DecodeJobFailed(const json& j, JobFailedMsg* f, std::string* err) {
  auto it = j.find("failure");
  if (it != j.end() && !FailureFromJson(*it, &f->failure, err)) return false;
  return GetTextOr(j, "message", &f->message, err) && GetEndReason(j, &f->end_reason, err);
}

constexpr std::pair<EndReason, const char*> kEndReasonNames[] = {
    {EndReason::kUnknown, "unknown"},         {EndReason::kDone, "done"},
    {EndReason::kWorkerFailed, "worker_failed"}, {EndReason::kNodesLost, "nodes_lost"},
    {EndReason::kTooFewNodes, "too_few_nodes"}, {EndReason::kNoMajority, "no_majority"},
    {EndReason::kStopped, "stopped"},
    {EndReason::kHostLost, "host_lost"},      {EndReason::kCrashLoop, "crash_loop"},
    {EndReason::kBadInput, "bad_input"},      {EndReason::kError, "error"},
    {EndReason::kNoProgress, "no_progress"},
};

bool DecodeHello(const json& j, HelloMsg* h, std::string* err) {
  int64_t preferred = -1;
  if (!GetInt(j, "version", &h->version, err) || !GetName(j, "run_id", &h->run_id, err) ||
      !GetName(j, "name", &h->name, err) || !GetIntIn(j, "pid", 0, INT32_MAX, &h->pid, err) ||
      !GetIntIn(j, "preferred_rank", -1, kMaxCount, &preferred, err) ||
      !GetNonce(j, "nonce", &h->nonce, err) || !GetString(j, "proof", &h->proof, err))
    return false;
  int64_t port = 0;
  if (!GetIntOr(j, "listen_port", 0, 0, 65535, &port, err) ||
      !GetBoolOr(j, "guest", false, &h->guest, err) || !GetBoolOr(j, "observer", false, &h->observer, err))
    return false;
  h->preferred_rank = static_cast<int>(preferred);
  h->listen_port = static_cast<int>(port);
  return true;
}

std::string UnknownType(const Message& msg) {
  return fmt::format("unknown message type '{}'", EscapeForLog(msg.type));
}

}  // namespace

const char* EndReasonName(EndReason reason) { return NameIn(kEndReasonNames, reason, "unknown"); }

bool ParseEndReason(const std::string& name, EndReason* out) { return ValueIn(kEndReasonNames, name, out); }

std::string EncodeMessage(std::string_view type, json body) {
  body["type"] = std::string(type);
  return EncodeFrame(body.dump(-1, ' ', false, json::error_handler_t::replace));
}

bool DecodeMessage(std::string_view payload, Message* out, std::string* err) {
  json j = json::parse(payload.begin(), payload.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    if (err) *err = "message is not a JSON object";
    return false;
  }
  if (!GetString(j, "type", &out->type, err)) return false;
  out->body = std::move(j);
  return true;
}

bool GetString(const json& j, const char* key, std::string* out, std::string* err) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) {
    if (err) *err = fmt::format("field '{}' missing or not a string", key);
    return false;
  }
  *out = it->get<std::string>();
  return true;
}

bool GetInt(const json& j, const char* key, int64_t* out, std::string* err) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) {
    if (err) *err = fmt::format("field '{}' missing or not an integer", key);
    return false;
  }
  if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    if (err) *err = fmt::format("field '{}' is too large", key);
    return false;
  }
  *out = it->get<int64_t>();
  return true;
}

namespace {

bool SuccessorsFromJson(const json& j, std::vector<Successor>* out, std::string* err) {
  out->clear();
  auto it = j.find("successors");
  if (it == j.end()) return true;
  if (!it->is_array() || it->size() > static_cast<size_t>(kMaxCount))
    return Fail(err, "field 'successors' is not an array");
  for (const json& e : *it) {
    if (!e.is_object()) return Fail(err, "field 'successors' holds a non-object");
    Successor s;
    int64_t port = 0;
    if (!GetName(e, "name", &s.name, err) || !GetName(e, "addr", &s.addr, err) ||
        !GetIntIn(e, "port", 0, 65535, &port, err))
      return false;
    s.port = static_cast<int>(port);
    out->push_back(std::move(s));
  }
  return true;
}

json SuccessorsToJson(const std::vector<Successor>& successors) {
  json a = json::array();
  for (const Successor& s : successors) a.push_back({{"name", s.name}, {"addr", s.addr}, {"port", s.port}});
  return a;
}

}  // namespace

json RoundToJson(const RoundInfo& r) {
  json j = {{"round", r.round},           {"group_rank", r.group_rank},
          {"group_world_size", r.group_world_size}, {"rank_offset", r.rank_offset},
          {"world_size", r.world_size}, {"store_addr", r.store_addr},
          {"store_port", r.store_port}, {"use_agent_store", r.use_agent_store},
          {"restarts_used", r.restarts_used}, {"successors", SuccessorsToJson(r.successors)},
          {"spares", r.spares}};
  if (!r.regime.empty()) j["regime"] = r.regime;
  if (r.max_restarts >= 0) j["max_restarts"] = r.max_restarts;
  return j;
}

json StandbyToJson(const RoundInfo& r) {
  json j = {{"round", r.round}, {"group_world_size", r.group_world_size},
            {"successors", SuccessorsToJson(r.successors)}, {"spares", r.spares},
            {"restarts_used", r.restarts_used}};
  if (!r.regime.empty()) j["regime"] = r.regime;
  if (r.max_restarts >= 0) j["max_restarts"] = r.max_restarts;
  return j;
}

bool RoundFromJson(const json& j, RoundInfo* r, std::string* err) {
  int64_t round = 0, group_rank = 0, gws = 0, offset = 0, ws = 0, port = 0, used = 0, spares = 0,
          budget = -1;
  if (!GetIntIn(j, "round", 0, INT64_MAX, &round, err) ||
      !GetIntIn(j, "group_rank", 0, kMaxCount, &group_rank, err) ||
      !GetIntIn(j, "group_world_size", 1, kMaxCount, &gws, err) ||
      !GetIntIn(j, "rank_offset", 0, kMaxCount, &offset, err) ||
      !GetIntIn(j, "world_size", 1, kMaxCount, &ws, err) ||
      !GetIntIn(j, "store_port", 0, 65535, &port, err) ||
      !GetIntIn(j, "restarts_used", 0, kMaxCount, &used, err) ||
      !GetIntOr(j, "spares", 0, 0, kMaxCount, &spares, err) ||
      !GetIntOr(j, "max_restarts", -1, -1, kMaxCount, &budget, err) ||
      !GetStoreAddr(j, &r->store_addr, err) ||
      !GetBoolOr(j, "use_agent_store", false, &r->use_agent_store, err) ||
      !SuccessorsFromJson(j, &r->successors, err) || !GetRegimeOr(j, &r->regime, err))
    return false;
  // The round's first nodes only (RendezvousSettings::failover_successors), never more than it has.
  if (r->successors.size() > static_cast<size_t>(gws))
    return Fail(err, fmt::format("round message: {} successors for {} nodes", r->successors.size(),
                                 gws));
  if (group_rank >= gws || offset >= ws)
    return Fail(err, fmt::format("round message: group_rank {} of {} or rank_offset {} of {} "
                                 "out of range", group_rank, gws, offset, ws));
  r->round = static_cast<uint64_t>(round);
  r->group_rank = static_cast<int>(group_rank);
  r->group_world_size = static_cast<int>(gws);
  r->rank_offset = static_cast<int>(offset);
  r->world_size = static_cast<int>(ws);
  r->store_port = static_cast<int>(port);
  r->restarts_used = static_cast<int>(used);
  r->spares = static_cast<int>(spares);
  r->max_restarts = static_cast<int>(budget);
  return true;
}

namespace {

// A waiting message's optional "standby": the round a spare stands by for, as a voter.
bool DecodeWaiting(const json& j, HostMessage* out, std::string* err) {
  out->standby.reset();
  if (!GetTextOr(j, "message", &out->text, err)) return false;
  auto it = j.find("standby");
  if (it == j.end()) return true;
  if (!it->is_object()) return Fail(err, "field 'standby' is not an object");
  RoundInfo r;
  int64_t round = 0, spares = 0, used = 0, gws = 0, budget = -1;
  if (!GetIntIn(*it, "round", 0, INT64_MAX, &round, err) ||
      !GetIntOr(*it, "spares", 0, 0, kMaxCount, &spares, err) ||
      !GetIntOr(*it, "restarts_used", 0, 0, kMaxCount, &used, err) ||
      !GetIntOr(*it, "max_restarts", -1, -1, kMaxCount, &budget, err) ||
      !SuccessorsFromJson(*it, &r.successors, err) ||
      !GetIntOr(*it, "group_world_size", static_cast<int64_t>(r.successors.size()), 0, kMaxCount,
                &gws, err) ||
      !GetRegimeOr(*it, &r.regime, err))
    return false;
  // The round's first nodes only (RendezvousSettings::failover_successors).
  if (r.successors.size() > static_cast<size_t>(gws))
    return Fail(err, fmt::format("standby: {} successors for {} nodes", r.successors.size(), gws));
  r.round = static_cast<uint64_t>(round);
  r.group_rank = -1;
  r.group_world_size = static_cast<int>(gws);
  r.spares = static_cast<int>(spares);
  r.restarts_used = static_cast<int>(used);
  r.max_restarts = static_cast<int>(budget);
  out->standby = std::move(r);
  return true;
}

}  // namespace

json FailureToJson(const WorkerFailure& f) {
  return {{"global_rank", f.global_rank}, {"local_rank", f.local_rank}, {"host", f.host},
          {"exit_code", f.exit_code},     {"signal", f.signal},         {"time_unix_ms", f.time_unix_ms},
          {"message", f.message},         {"traceback", f.traceback}};
}

bool FailureFromJson(const json& j, WorkerFailure* f, std::string* err) {
  if (!j.is_object()) return Fail(err, "field 'failure' is not an object");
  int64_t g = 0, l = 0, code = 0, sig = 0, t = 0;
  if (!GetIntIn(j, "global_rank", -1, kMaxCount, &g, err) ||
      !GetIntIn(j, "local_rank", -1, kMaxCount, &l, err) ||
      !GetIntIn(j, "exit_code", INT32_MIN, INT32_MAX, &code, err) ||
      !GetIntIn(j, "signal", 0, 1024, &sig, err) || !GetInt(j, "time_unix_ms", &t, err) ||
      !GetString(j, "host", &f->host, err) || !GetString(j, "message", &f->message, err) ||
      !GetString(j, "traceback", &f->traceback, err))
    return false;
  f->global_rank = static_cast<int>(g);
  f->local_rank = static_cast<int>(l);
  f->exit_code = static_cast<int>(code);
  f->signal = static_cast<int>(sig);
  f->time_unix_ms = t;
  return true;
}

const char* HostMessageName(HostMessage::Kind kind) {
  using K = HostMessage::Kind;
  switch (kind) {
    case K::kChallenge: return "challenge";
    case K::kWelcome: return "welcome";
    case K::kError: return "error";
    case K::kRound: return "round";
    case K::kRestart: return "restart";
    case K::kJobFailed: return "job_failed";
    case K::kDone: return "done";
    case K::kFatal: return "fatal";
    case K::kWaiting: return "waiting";
    case K::kHeartbeat: return "heartbeat";
    case K::kStatus: return "status";
  }
  return "?";
}

bool DecodeHostMessage(const Message& msg, HostMessage* out, std::string* err) {
  using K = HostMessage::Kind;
  const json& j = msg.body;
  std::string why;
  bool ok = true;
  if (msg.type == "challenge") out->kind = K::kChallenge, ok = DecodeChallenge(j, &out->challenge, &why);
  else if (msg.type == "welcome") out->kind = K::kWelcome, ok = DecodeWelcome(j, &out->welcome, &why);
  else if (msg.type == "round") out->kind = K::kRound, ok = RoundFromJson(j, &out->round, &why);
  else if (msg.type == "restart") out->kind = K::kRestart, ok = DecodeRestart(j, &out->restart, &why);
  else if (msg.type == "job_failed")
    out->kind = K::kJobFailed, ok = DecodeJobFailed(j, &out->job_failed, &why);
  else if (msg.type == "heartbeat") out->kind = K::kHeartbeat;
  else if (msg.type == "error") out->kind = K::kError, ok = GetTextOr(j, "message", &out->text, &why);
  else if (msg.type == "done") out->kind = K::kDone, ok = GetTextOr(j, "message", &out->text, &why);
  else if (msg.type == "fatal")
    out->kind = K::kFatal,
    ok = GetTextOr(j, "message", &out->text, &why) && GetEndReason(j, &out->end_reason, &why);
  else if (msg.type == "waiting") out->kind = K::kWaiting, ok = DecodeWaiting(j, out, &why);
  else if (msg.type == "status") {
    // The view itself is checked by its reader (launcher/job_status.h).
    out->kind = K::kStatus;
    auto it = j.find("view");
    ok = it != j.end() || Fail(&why, "field 'view' missing");
    if (ok) out->status_view = *it;
  } else return Fail(err, UnknownType(msg));
  if (!ok) return Fail(err, fmt::format("bad '{}' message: {}", msg.type, why));
  return true;
}

bool DecodeAgentMessage(const Message& msg, AgentMessage* out, std::string* err) {
  using K = AgentMessage::Kind;
  const json& j = msg.body;
  std::string why;
  bool ok = true;
  int64_t value = 0;
  if (msg.type == "hello") {
    out->kind = K::kHello, ok = DecodeHello(j, &out->hello, &why);
  } else if (msg.type == "join") {
    out->kind = K::kJoin, ok = GetIntIn(j, "local_world_size", 1, 1 << 20, &value, &why);
    out->local_world_size = static_cast<int>(value);
    ok = ok && GetIntOr(j, "member_of", -1, -1, INT64_MAX, &out->member_of, &why);
    ok = ok && GetTextOr(j, "standby", &out->standby, &why);
    if (ok && out->standby.size() > kMaxStandByBytes)
      ok = Fail(&why, fmt::format("field 'standby' is {} bytes (at most {})", out->standby.size(),
                                  kMaxStandByBytes));
  } else if (msg.type == "succeeded" || msg.type == "failure") {
    out->kind = msg.type == "failure" ? K::kFailure : K::kSucceeded;
    ok = GetIntIn(j, "round", 0, INT64_MAX, &value, &why);
    out->round = static_cast<uint64_t>(value);
    if (ok && out->kind == K::kFailure) {
      auto it = j.find("failure");
      ok = it != j.end() ? FailureFromJson(*it, &out->failure, &why)
                         : Fail(&why, "field 'failure' missing");
    }
  } else if (msg.type == "end_job") {
    out->kind = K::kEndJob;
    auto it = j.find("failure");
    ok = (it == j.end() || FailureFromJson(*it, &out->failure, &why)) &&
         GetTextOr(j, "message", &out->message, &why) && GetEndReason(j, &out->end_reason, &why);
    if (ok && out->end_reason == EndReason::kUnknown) ok = Fail(&why, "field 'end_reason' missing or unknown");
  } else if (msg.type == "heartbeat") {
    out->kind = K::kHeartbeat;
  } else if (msg.type == "leave") {
    out->kind = K::kLeave;
    int64_t signal = 0;
    ok = GetIntOr(j, "signal", 0, 0, 64, &signal, &why);
    out->leave_signal = static_cast<int>(signal);
  } else if (msg.type == "status") {
    out->kind = K::kStatus;
  } else {
    return Fail(err, UnknownType(msg));
  }
  if (!ok) return Fail(err, fmt::format("bad '{}' message: {}", msg.type, why));
  return true;
}

}  // namespace elastic
