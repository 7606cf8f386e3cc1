// `elasticrun status JOBID[.STEP]` (docs/user.md "Job status"): where a Slurm job's
// elastic step has its rendezvous, found from what Slurm says of the job. No Slurm
// calls here: the shell (status_command.cc) runs scontrol and hands the text over.
//   ParseJobStepArg     the command-line argument, read once at the edge
//   ParseScontrolJob    `scontrol --oneliner show job JOBID`: owner and state
//   ParseScontrolSteps  `scontrol --oneliner show step JOBID`: the running steps
//   PlanStatusTarget    which step, its run id, its port and its nodes, or a
//                       refusal naming the job and why (unknown, finished, not
//                       running, another user's, no step running)
// The run id and port follow the SPANK plugin's rules (spank_plugin/task_env.h):
// --elastic-rdzv-id, else JOBID.STEP; --elastic-rdzv-port or the endpoint's port,
// else the step's first reserved port (srun --resv-ports), else the port derived
// from JOBID and STEP (common/rdzv_port.h). Slurm 22.05's scontrol shows no
// step's command line: a job started with its own --elastic-rdzv-id or port is
// asked with that option given to `elasticrun status` too. Table-tested in
// status_target_test.cc; all three parsers are fuzzed (fuzz/status_target_fuzz.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace elastic {

struct JobStepArg {
  uint32_t job_id = 0;
  std::optional<uint32_t> step_id;  // unset: the job's first running step
};
// "812" or "812.0" (decimal, job id 1..4294967293 as Slurm issues them, step
// 0..4294967039); false with *err naming the bad value and the form.
bool ParseJobStepArg(std::string_view text, JobStepArg* out, std::string* err);

struct SlurmJobFacts {
  uint32_t job_id = 0;
  std::string user;       // UserId=NAME(UID): NAME
  uint32_t user_id = 0;   // UID
  std::string state;      // JobState: RUNNING, PENDING, COMPLETED, ...
};
// The first line of `scontrol --oneliner show job` (false with *err naming what is missing).
bool ParseScontrolJob(std::string_view text, SlurmJobFacts* out, std::string* err);

struct SlurmStepFacts {
  uint32_t job_id = 0;
  std::string step;        // "0", "batch", "extern", "TDB" (a step not started yet)
  std::optional<uint32_t> step_id;  // a numbered step (srun)
  std::string state;       // RUNNING, PENDING, ...
  std::string nodelist;    // "n[1-2]"
  std::string resv_ports;  // "12001", "12000-12001", "" (none)
  std::string submit_line; // Slurm 23.02 and later: "srun --elastic=2:4 ..."; "" (not shown)
};
// Every line of `scontrol --oneliner show step JOBID` (an empty text: none). False
// with *err naming the line and what is missing in it.
bool ParseScontrolSteps(std::string_view text, std::vector<SlurmStepFacts>* out, std::string* err);

enum class StatusRefusal { kNone, kNoSuchJob, kFinished, kNotRunning, kAnotherUser, kNoStep };

// What the user gave besides the job (their --rdzv-id / port win over the derived ones).
struct StatusOverrides {
  std::optional<std::string> rdzv_id;
  std::optional<int> port;
};

struct StatusTarget {
  uint32_t job_id = 0;
  uint32_t step_id = 0;
  std::string nodelist;     // the step's nodes: its rendezvous host and successors among them
  int port = 0;
  std::string port_source;  // "derived from job 812 step 0 in 61000-65535", "--elastic-rdzv-port"
  std::string rdzv_id;
};

// `found`: Slurm knows the job (scontrol did not say "Invalid job id"); `job` is then
// its facts. `uid`: the asking user. Order: unknown, finished, not running, another
// user (nothing of the job is said to them), no numbered step running (or not the
// one asked for).
StatusRefusal PlanStatusTarget(bool found, const SlurmJobFacts& job, const std::vector<SlurmStepFacts>& steps,
                               const JobStepArg& arg, uint32_t uid, const StatusOverrides& given,
                               StatusTarget* target, std::string* err);

// Job states after which nothing runs (Slurm's JOB_STATE_BASE names past RUNNING).
bool SlurmJobFinished(std::string_view state);

}  // namespace elastic

// ---- the shell (status_lookup.cc) ----

namespace elastic {

// Where the step's rendezvous host is now.
struct FoundRendezvous {
  StatusTarget target;
  std::string node;     // the Slurm node that answered as the run's host
  std::string address;  // its address (name resolution, else Slurm's NodeAddr)
  bool moved = false;   // not the step's first node: the host moved there after a failover
};

// Asks Slurm (scontrol, each run within `timeout_ms`) for the job and its steps, plans
// the target, then asks the step's first kStatusCandidates nodes at the port at once
// (rendezvous/host_discovery.h AskPeers, the question a latecomer agent asks) which of
// them hosts the run: the first whose host has completed a round (after a failover, the
// successor that took over), else the first whose host is still forming round 0.
// `env`: scontrol's environment (SLURM_CONF, PATH). False with *err saying why; then
// *refusal tells a refusal of PlanStatusTarget apart (kNone: another failure).
inline constexpr size_t kStatusCandidates = 16;
bool FindJobRendezvous(const JobStepArg& arg, const StatusOverrides& given, const std::vector<std::string>& env,
                       int timeout_ms, FoundRendezvous* out, StatusRefusal* refusal, std::string* err);

}  // namespace elastic
