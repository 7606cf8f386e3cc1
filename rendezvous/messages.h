// Messages of the agent <-> host rendezvous protocol: one JSON object per frame,
// {"type": ..., ...fields}. Protocol (version 1):
//   host  -> agent  challenge {version, run_id, nonce, auth: "token"|"munge"|"none"}  on accept
//   agent -> host   hello {version, run_id, name, preferred_rank, auth, proof}
//   host  -> agent  welcome {node_id} | error {message} (then closes)
//   agent -> host   join {local_world_size} | heartbeat | failure {round, failure}
//                   | succeeded {round} | leave
//   host  -> agent  round {round info} | restart {reason} | job_failed {failure, message}
//                   | done {message} | fatal {message} | waiting {message} | heartbeat
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "rendezvous/rendezvous_handler.h"

namespace elastic {

inline constexpr int kRendezvousProtocolVersion = 1;

struct Message {
  std::string type;
  nlohmann::json body;  // the whole object, "type" included
};

std::string EncodeMessage(std::string_view type, nlohmann::json body = nlohmann::json::object());
// Refuses anything but a JSON object with a string "type".
bool DecodeMessage(std::string_view payload, Message* out, std::string* err);

// Typed field access: false with *err naming the field when missing or mistyped.
bool GetString(const nlohmann::json& j, const char* key, std::string* out, std::string* err);
bool GetInt(const nlohmann::json& j, const char* key, int64_t* out, std::string* err);

nlohmann::json RoundToJson(const RoundInfo& info);
bool RoundFromJson(const nlohmann::json& j, RoundInfo* info, std::string* err);
nlohmann::json FailureToJson(const WorkerFailure& f);
bool FailureFromJson(const nlohmann::json& j, WorkerFailure* f, std::string* err);

}  // namespace elastic
