#include "rendezvous/messages.h"

#include <fmt/format.h>

#include "rendezvous/frame.h"

namespace elastic {

using nlohmann::json;

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
  *out = it->get<int64_t>();
  return true;
}

json RoundToJson(const RoundInfo& r) {
  return {{"round", r.round},           {"group_rank", r.group_rank},
          {"group_world_size", r.group_world_size}, {"rank_offset", r.rank_offset},
          {"world_size", r.world_size}, {"store_addr", r.store_addr},
          {"store_port", r.store_port}, {"use_agent_store", r.use_agent_store},
          {"restarts_used", r.restarts_used}};
}

bool RoundFromJson(const json& j, RoundInfo* r, std::string* err) {
  int64_t round = 0, group_rank = 0, gws = 0, offset = 0, ws = 0, port = 0, used = 0;
  if (!GetInt(j, "round", &round, err) || !GetInt(j, "group_rank", &group_rank, err) ||
      !GetInt(j, "group_world_size", &gws, err) || !GetInt(j, "rank_offset", &offset, err) ||
      !GetInt(j, "world_size", &ws, err) || !GetInt(j, "store_port", &port, err) ||
      !GetInt(j, "restarts_used", &used, err) || !GetString(j, "store_addr", &r->store_addr, err))
    return false;
  if (round < 0 || group_rank < 0 || gws < 1 || group_rank >= gws || offset < 0 || ws < 1 ||
      port < 0 || port > 65535 || used < 0) {
    if (err) *err = "round message has out-of-range values";
    return false;
  }
  r->round = static_cast<uint64_t>(round);
  r->group_rank = static_cast<int>(group_rank);
  r->group_world_size = static_cast<int>(gws);
  r->rank_offset = static_cast<int>(offset);
  r->world_size = static_cast<int>(ws);
  r->store_port = static_cast<int>(port);
  r->restarts_used = static_cast<int>(used);
  r->use_agent_store = j.value("use_agent_store", false);
  return true;
}

json FailureToJson(const WorkerFailure& f) {
  return {{"global_rank", f.global_rank}, {"local_rank", f.local_rank}, {"host", f.host},
          {"exit_code", f.exit_code},     {"signal", f.signal},         {"time_unix_ms", f.time_unix_ms},
          {"message", f.message},         {"traceback", f.traceback}};
}

bool FailureFromJson(const json& j, WorkerFailure* f, std::string* err) {
  if (!j.is_object()) {
    if (err) *err = "failure is not an object";
    return false;
  }
  int64_t g = 0, l = 0, code = 0, sig = 0, t = 0;
  if (!GetInt(j, "global_rank", &g, err) || !GetInt(j, "local_rank", &l, err) ||
      !GetInt(j, "exit_code", &code, err) || !GetInt(j, "signal", &sig, err) ||
      !GetInt(j, "time_unix_ms", &t, err) || !GetString(j, "host", &f->host, err) ||
      !GetString(j, "message", &f->message, err) || !GetString(j, "traceback", &f->traceback, err))
    return false;
  f->global_rank = static_cast<int>(g);
  f->local_rank = static_cast<int>(l);
  f->exit_code = static_cast<int>(code);
  f->signal = static_cast<int>(sig);
  f->time_unix_ms = t;
  return true;
}

}  // namespace elastic
