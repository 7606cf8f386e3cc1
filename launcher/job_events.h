// The job's event record (docs/user.md "Event record"): one JSON object per line,
// written by the rendezvous host (and by its successor after a takeover, which
// continues the record). Three parts, each pure:
//   JobEvent            one event, the fields of every kind in one struct
//   EncodeJobEvent /    the one encoder and the one decoder of a line (the
//   DecodeJobEvent      timeline reads the record back with it; a fuzz target too)
//   DeriveJobEvents     which events one step of the host's state machine makes
//                       (rendezvous/host_observer.h), over a small memory of its own
// The file writer is the shell (event_writer.h).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rendezvous/host_observer.h"

namespace elastic {

// Bumped when a field changes meaning or goes, or a new event kind comes (a reader
// refuses a kind it does not know); new fields keep the version.
// 2: worker_hung, health_check and requeue, written by the agent that reaches them.
inline constexpr int kJobEventVersion = 2;
// A round's members listed by name, at most this many (members_total counts them all):
// one line per round stays small on a 10,000-node job.
inline constexpr size_t kJobEventMaxMembers = 256;
inline constexpr size_t kJobEventMaxText = 1024;  // message, error-file excerpt, reason

enum class JobEventKind {
  kJobStart,       // a host starts (takeover: its successor after the host's loss)
  kRound,          // a round completed: its members start their workers
  kWorkerFailure,  // a worker failure counted against --max-restarts (the first of its round)
  kNodeLost,       // a member left the running round (its agent exited, or went silent)
  kNodeJoined,     // a node joined while the round ran below MAX: the group grows
  kEnd,            // the job ended (done, failed, fatal)
  // Verdicts of one agent on its own node, written by that agent (not the host):
  kWorkerHung,     // a worker's FileTimerClient timer expired: stacks collected, then failed
  kHealthCheck,    // --health-check kept this node out of a round, or passes again after that
  kRequeue,        // --requeue: the agent acting for the job asked Slurm to requeue it, or says why not
};
const char* JobEventKindName(JobEventKind kind);
bool ParseJobEventKind(const std::string& name, JobEventKind* out);

struct JobEvent {
  JobEventKind kind = JobEventKind::kJobStart;
  int version = kJobEventVersion;
  int64_t time_unix_ms = 0;  // "time": UTC, ISO 8601 with milliseconds
  std::string run_id;
  std::string host;          // the agent that hosts the rendezvous (wrote the line)
  uint64_t round = 0;        // the round formed or running
  int restarts_used = 0;
  int restarts_left = 0;
  // kJobStart
  bool takeover = false;
  int min_nodes = 0;
  int max_nodes = 0;
  int max_restarts = 0;
  // kRound
  std::string reason;        // start, worker_failure, node_lost, node_joined, departure, failover,
                             // restart;
                             // kNodeLost/kEnd: what the host saw / the end reason's name
  int nodes = 0;             // group world size
  int world_size = 0;        // workers
  std::vector<std::string> members;  // node names in group-rank order (at most kJobEventMaxMembers)
  int members_total = 0;
  std::optional<int64_t> recovery_ms;  // monotonic: from the detection to this round's completion
  // kWorkerFailure, kEnd (the root cause, as the failure summary names it)
  std::optional<WorkerFailure> failure;
  // kNodeLost, kNodeJoined
  std::string node;
  bool notice = false;       // kNodeLost: its agent said it leaves (a departure: no restart counted)
  // kEnd; kWorkerHung, kHealthCheck, kRequeue: what the agent said
  std::string message;
};

std::string EncodeJobEvent(const JobEvent& event);  // one line, no newline
// A worker failure as the record writes it ("failure": rank, node, cause...) and reads it back.
nlohmann::ordered_json EventFailureJson(const WorkerFailure& failure);
bool DecodeEventFailure(const nlohmann::json& j, WorkerFailure* failure, std::string* err);
// False with *err naming what is wrong: not JSON, a missing or mistyped field, an
// unknown kind, a version newer than this one.
bool DecodeJobEvent(const std::string& line, JobEvent* event, std::string* err);

// What an agent knows when it writes a verdict of its own (MakeWorkerHung, ...):
// `node` is its name in the rendezvous (the line's "host" and "node").
struct AgentEventContext {
  std::string run_id;
  std::string node;
  uint64_t round = 0;       // the round its workers run in (or last ran in)
  int restarts_used = 0;
  int max_restarts = 0;
};
// `hung`: the failure the agent reports (rank, local rank, node, the hang message
// FormatHangMessage wrote: timer, stacks' files).
JobEvent MakeWorkerHung(const AgentEventContext& ctx, const WorkerFailure& hung, int64_t unix_ms);
// `verdict` (the line's reason): "kept_out" (the first failed check of a stretch: the
// node stays out of rounds, checked again), "passes" (after being kept out: it joins),
// "gave_up" (failing past --health-check-give-up: the node leaves the job); `result`:
// DescribeHealthResult's words ("exit code 3", "killed after the 60 s timeout").
JobEvent MakeHealthCheckEvent(const AgentEventContext& ctx, const std::string& verdict, const std::string& result,
                              int64_t unix_ms);
// reason: "requeue" (asked Slurm), "requeue_failed" (scontrol failed), "limit_reached",
// "not_batch"; `message`: the agent's console line.
JobEvent MakeRequeueEvent(const AgentEventContext& ctx, const std::string& reason, const std::string& message,
                          int64_t unix_ms);

// The last worker failures `elasticrun status` shows (job_status.h).
inline constexpr size_t kJobStatusMaxFailures = 5;

// What DeriveJobEvents remembers between steps (and `elasticrun status` shows).
struct JobEventMemory {
  std::string run_id;
  std::string host;
  int min_nodes = 0;
  int max_nodes = 0;
  int max_restarts = 0;
  // For the status view: the newest failures last, the recoveries so far, the
  // round running since, and the last membership change ("n42 lost", "n7 joined").
  std::vector<WorkerFailure> last_failures;
  int recoveries = 0;
  int64_t recovery_ms_total = 0;
  int64_t round_since_unix_ms = 0;
  std::string last_change;
  int64_t last_change_unix_ms = 0;
  std::string next_round_reason = "start";   // why the next round forms
  std::optional<TimePoint> recovering_since;  // detection of the failure or loss
  bool ended = false;
};

// A takeover (`carried`) is a recovery: from this node's detection of the old
// host's loss (carried->host_lost_at; else `now`) to the successor's first round.
JobEvent MakeJobStart(const RendezvousSettings& settings, const CarriedRound* carried,
                      JobEventMemory* memory, TimePoint now, int64_t unix_ms);
// Events of one step of the host, in order (most steps: none). `unix_ms` stamps them.
std::vector<JobEvent> DeriveJobEvents(const HostStep& step, JobEventMemory* memory, int64_t unix_ms);

}  // namespace elastic
