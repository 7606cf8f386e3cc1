// Messages of the agent <-> host rendezvous protocol: one JSON object per frame,
// {"type": ..., ...fields}. Protocol (version 2):
//   host  -> agent  challenge {version, run_id, nonce, auth: "token"|"munge"|"none", round,
//                              last_completed, regime}
//   agent -> host   hello {version, run_id, name, pid, preferred_rank, nonce, proof, listen_port,
//                          guest?, observer?}
//   host  -> agent  welcome {node_id, proof} | error {message} (then closes)
//   agent -> host   join {local_world_size, member_of, standby?} | heartbeat | failure {round, failure}
//                   | succeeded {round} | leave {signal?} | end_job {end_reason, failure, message}
//   host  -> agent  round {round info} | restart {round, reason, restarts_used, worker_failed}
//                   | job_failed {failure, message, end_reason} | done {message}
//                   | fatal {message, end_reason} | waiting {message, standby?} | heartbeat
//                   | error
// An observer (RendezvousHandler::Watch: a node kept out by its health check) is welcomed and
// heartbeats but sends no join until it may take part: it is never in a round, and gets the
// job's end (done, job_failed, fatal) like every connected agent. No message or field of its
// own, so agents and hosts of this version with and without observers work together.
// A status request (`elasticrun status`, launcher/job_status.h): an observer sends `status`
// once welcomed; the host answers status {view} (null: it keeps no view) and closes. A host
// without it drops the asker with an error naming the unknown type. A host in token mode
// (the plugin's per-step token, which only the step's tasks hold) also takes a hello with
// observer: true proven with munge (the same uid as the host's): such a peer is never a node
// (no round, no record), gets no session keys, and may send status and heartbeat only.
// A spare standing by when a round completed gets waiting {standby: {round, successors,
// spares}}: it is a voter of that round and may follow a failover (docs/design.md "Spares").
// A round carries its successors [{name, addr, port}] (group-rank order): where
// each of its first failover_successors members' agents listens should it take
// over (docs/design.md "Failover"); never the whole member list, which made every
// round message grow with N. A standby carries the round's group_world_size too.
// join's standby: why the node should stand by rather than train (Slurm's verdict on it:
// "n2 is DRAIN in Slurm (reason: ...)"); absent or "": it may train. The host puts such a
// node on its wait list unless the round needs it to reach MIN (docs/user.md, "Slurm's
// node state"); a host without the field ignores it (the node trains).
// leave's signal: the signal that stops the agent (scancel, a time limit, preemption); absent
// or 0: it leaves for a reason of its own. Optional: a host without it reads a plain leave.
// end_job: the agent ends the job for all (its workers' crash loop); a host without it
// drops the agent as for any unknown message, which ends the job as a lost node does.
// The failover fields (round, last_completed, listen_port, member_of, successors, regime) are optional,
// and so are restart's restarts_used (the job-wide count once the restart is counted) and
// end_reason (EndReasonName: why the job ended; an unknown name reads as kUnknown), so
// agents and hosts of this protocol version with and without them work together.
// Each side reads the other's messages through ONE decoder (DecodeHostMessage on
// the agent, DecodeAgentMessage on the host) that never throws: it checks every
// field's type and range and names what is wrong, so the protocol code never
// touches JSON (a wrongly typed field used to throw nlohmann's type_error on the
// event loop and abort the agent with its workers).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "rendezvous/rendezvous_handler.h"

namespace elastic {

// 2: mutual authentication (agent nonce in hello, host proof in welcome).
// 3: with a token, every frame after the welcome carries an authentication tag
//    (RendezvousConnection::AuthenticateFrames).
// 4: both proofs cover every handshake field (challenge, hello, the welcome's
//    node id: Handshake in auth.h), not only the nonces and the run id. Agents
//    and hosts of different versions refuse each other by name at the challenge.
inline constexpr int kRendezvousProtocolVersion = 4;

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
nlohmann::json StandbyToJson(const RoundInfo& info);  // round, successors, spares
bool RoundFromJson(const nlohmann::json& j, RoundInfo* info, std::string* err);
nlohmann::json FailureToJson(const WorkerFailure& f);
bool FailureFromJson(const nlohmann::json& j, WorkerFailure* f, std::string* err);

// ---- host -> agent ----

struct ChallengeMsg {
  int64_t version = 0;
  std::string run_id;
  std::string nonce;  // the host's, hex
  std::string auth;   // "none", "token" or "munge"
  uint64_t round = 0; // the round the host forms or runs (fencing: failover_rules.h)
  int64_t last_completed = -1;  // the last completed round it knows of (ShouldYield)
  std::string regime;  // RoundInfo::regime of the host's regime ("": not told)
};
struct WelcomeMsg {
  int64_t node_id = 0;
  std::string proof;  // the host's proof over the transcript ("" with auth none)
};
struct RestartMsg {
  uint64_t round = 0;
  std::string reason;
  int restarts_used = -1;  // -1: not told
  bool worker_failed = false;  // a worker's failure ended the round (not churn); optional
};
struct JobFailedMsg {
  WorkerFailure failure;
  std::string message;
  EndReason end_reason = EndReason::kUnknown;
};

struct HostMessage {
  enum class Kind { kChallenge, kWelcome, kError, kRound, kRestart, kJobFailed, kDone, kFatal,
                    kWaiting, kHeartbeat, kStatus };
  Kind kind = Kind::kHeartbeat;
  ChallengeMsg challenge;
  WelcomeMsg welcome;
  RoundInfo round;
  RestartMsg restart;
  JobFailedMsg job_failed;
  std::string text;  // error, done, fatal, waiting: their "message"
  std::optional<RoundInfo> standby;  // waiting: the round this spare votes in (group_rank -1)
  EndReason end_reason = EndReason::kUnknown;  // fatal
  nlohmann::json status_view;  // status: the host's view, read by launcher/job_status.h
};
const char* HostMessageName(HostMessage::Kind kind);
bool DecodeHostMessage(const Message& msg, HostMessage* out, std::string* err);

// ---- agent -> host ----

struct HelloMsg {
  int64_t version = 0;
  std::string run_id;
  std::string name;
  int64_t pid = 0;
  int preferred_rank = -1;
  std::string nonce;  // the agent's, hex
  std::string proof;
  int listen_port = 0;  // the agent's own rendezvous port, should it take over (0: none)
  bool guest = false;   // its job joined the run (--elastic-join): ranked after the run's own
  // A status asker without the token of a host in token mode (`elasticrun status` from outside
  // the step): its proof, and the host's, are munge's; it may ask for status, nothing else.
  bool observer = false;
};

struct AgentMessage {
  enum class Kind { kHello, kJoin, kHeartbeat, kFailure, kSucceeded, kLeave, kEndJob, kStatus };
  Kind kind = Kind::kHeartbeat;
  HelloMsg hello;
  int local_world_size = 0;  // join
  int64_t member_of = -1;    // join: the last round its workers ran in (-1: none)
  std::string standby;       // join: why it should stand by ("": it may train); at most 512 bytes
  uint64_t round = 0;        // failure, succeeded
  WorkerFailure failure;     // failure, end_job
  EndReason end_reason = EndReason::kUnknown;  // end_job
  std::string message;       // end_job
  int leave_signal = 0;      // leave: the signal that stops its agent (0: none, or not told)
};
bool DecodeAgentMessage(const Message& msg, AgentMessage* out, std::string* err);

}  // namespace elastic
