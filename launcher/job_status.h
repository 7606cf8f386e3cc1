// `elasticrun status` (docs/user.md "Job status"): the job as its rendezvous host
// sees it now. The host builds the view from its state and the event record's
// memory (job_events.h) when an authenticated observer asks (messages.h
// `status`), and sends it as one JSON object; the command decodes it and prints
// it as text or, with --json, as it came. Three pure parts:
//   MakeJobStatus      the view of a state and a memory
//   EncodeJobStatus /  the one encoder and the one decoder of the view
//   DecodeJobStatus
//   RenderJobStatus    the text a user reads
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "launcher/job_events.h"

namespace elastic {

// Bumped when a field changes meaning or goes; new fields keep the version.
inline constexpr int kJobStatusVersion = 1;

struct JobStatusNode {
  std::string name;
  // Members of the running round: running, succeeded. Others: joining (in the
  // round being formed), spare (waits for a place), watching (kept out by its
  // health check, or another status request).
  std::string state;
  std::string standby;  // why it stands by (Slurm's verdict), if it said
};

struct JobStatus {
  int version = kJobStatusVersion;
  int64_t time_unix_ms = 0;  // when the host answered
  std::string run_id;
  std::string host;
  std::string phase;         // forming, running, finishing, ended
  uint64_t round = 0;
  int64_t round_since_unix_ms = 0;  // the round's completion (0: none yet)
  int nodes = 0;             // of the running round
  int world_size = 0;
  int min_nodes = 0;
  int max_nodes = 0;
  int restarts_used = 0;
  int restarts_left = 0;
  int max_restarts = 0;
  std::vector<JobStatusNode> members;  // group-rank order, at most kJobEventMaxMembers
  int members_total = 0;
  std::vector<JobStatusNode> others;   // connected, not members; at most kJobEventMaxMembers
  int others_total = 0;
  std::vector<WorkerFailure> last_failures;  // newest last, at most kJobStatusMaxFailures
  int recoveries = 0;
  int64_t recovery_ms_total = 0;
  std::string last_change;   // "n42 lost", "n7 joined", "rank 3 failed on n2 (exit code 1)"
  int64_t last_change_unix_ms = 0;
};

// `requester`: the node id of the observer that asks (not listed).
JobStatus MakeJobStatus(const RendezvousState& state, const JobEventMemory& memory, NodeId requester,
                        int64_t unix_ms);

nlohmann::json EncodeJobStatus(const JobStatus& status);
// False with *err naming what is wrong (a missing or mistyped field, a newer version).
bool DecodeJobStatus(const nlohmann::json& j, JobStatus* status, std::string* err);

// Several lines for a user; `now_unix_ms` says how long ago things happened.
std::string RenderJobStatus(const JobStatus& status, int64_t now_unix_ms);

}  // namespace elastic
