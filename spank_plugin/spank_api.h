// The SPANK API as the plugin logic sees it: a small interface, so everything
// above it is unit-tested with a fake (testing/spank_api_fake.h) and no Slurm. The real
// implementation (spank_api_slurm.cc) is compiled into spank_elastic.so only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace elastic::spank {

// Where the plugin runs (spank_context()).
enum class Context { kError, kLocal, kRemote, kAllocator, kSlurmd, kJobScript };

// The spank_get_item items the plugin reads (all uint32_t in Slurm).
enum class Item { kJobId, kStepId, kNodeId, kNnodes, kLocalTaskCount, kTotalTaskCount, kLocalTaskId, kJobUid };

// The Slurm release the plugin was built for (SLURM_VERSION_NUMBER), for what
// differs between releases at run time (slurm_compat.h has the build-time ones).
struct SlurmRelease {
  int major = 0;
  int minor = 0;
  auto operator<=>(const SlurmRelease&) const = default;
};

// Slurm's special step ids (slurm.h: SLURM_BATCH_SCRIPT, SLURM_EXTERN_CONT,
// SLURM_INTERACTIVE_STEP); spank_api_slurm.cc static_asserts they match.
inline constexpr uint32_t kBatchStep = 0xfffffffb;
inline constexpr uint32_t kExternStep = 0xfffffffc;
inline constexpr uint32_t kInteractiveStep = 0xfffffffa;

// What Slurm says of the job an `--elastic-join=JOBID` names (SpankApi::LoadJob;
// decided on by join_target.h's PlanJoin).
// Slurm's job states as the join sees them (JOB_STATE_BASE of job_info_t).
enum class TargetState { kPending, kRunning, kSuspended, kFinished };

struct TargetStep {
  uint32_t step_id = 0;
  std::string nodelist;     // the step's nodes ("n[1-2]")
  std::string resv_ports;   // srun --resv-ports ("12000-12001"), "" if none
  std::string submit_line;  // "srun -N2 --elastic=2:4 python3 train.py" ("" if unknown)
};

struct TargetJob {
  bool found = false;       // false: Slurm knows no such job (or has purged it)
  uint32_t job_id = 0;
  uint32_t user_id = 0;
  TargetState state = TargetState::kPending;
  std::string state_name;   // Slurm's ("COMPLETED", "CANCELLED"), for messages
  bool job_elastic = false; // job-level --elastic (sbatch/salloc): every srun step is elastic
  std::string job_elastic_value;  // its value ("2:4"; "" when given bare)
  std::vector<TargetStep> steps;  // its running steps (batch/extern/interactive left out)
};

class SpankApi {
 public:
  virtual ~SpankApi() = default;

  virtual Context GetContext() = 0;
  // False when Slurm has no such item here (e.g. items in srun before local_user_init).
  virtual bool GetItem(Item item, uint32_t* value) = 0;
  // The task's argv (S_JOB_ARGV). Remote: the array slurmstepd execs.
  virtual bool GetArgv(std::vector<std::string>* argv) = 0;
  // Remote: the job/task environment (spank_getenv). Local/allocator: the process's
  // environment (getenv). False when unset.
  virtual bool GetEnv(const std::string& name, std::string* value) = 0;
  // Remote: spank_setenv into the task's environment. Local: setenv().
  virtual bool SetEnv(const std::string& name, const std::string& value) = 0;
  // Remote: spank_unsetenv from the task's environment. Local: unsetenv().
  virtual bool UnsetEnv(const std::string& name) = 0;
  // Makes `launcher` the program the task runs, with the original argv after it:
  // argv[0] replaced in place on Slurm < 23.11 (docs/design.md, "The SPANK plugin:
  // facts by Slurm version"),
  // spank_prepend_task_argv on >= 23.11. Sets *prepended on the latter.
  virtual bool WrapTask(const std::string& launcher, bool* prepended, std::string* err) = 0;
  // A message the user sees (srun's stderr), prefixed "elastic: ".
  virtual void Error(const std::string& message) = 0;
  virtual void Info(const std::string& message) = 0;
  // Remote, task_init only: ends the task's process (the child slurmstepd forked
  // for it, before exec) with `code`. Slurm ignores a failing callback of an
  // `optional` plugin and would run the command without elasticrun.
  virtual void ExitTask(int code) = 0;
  // True when `path` is an executable regular file (access X_OK).
  virtual bool IsExecutable(const std::string& path) = 0;
  // slurmstepd (remote init, on the host before any container plugin enters its
  // mount namespace): an O_PATH descriptor of the agent bundle directory `dir`
  // (close-on-exec; the plugin owns it), checked to hold the bundle's entry point
  // `elasticrun`, its loader and bin/elasticrun. -1 and *why on failure.
  virtual int OpenAgentBundle(const std::string& dir, std::string* why) = 0;
  // task_init: lets `fd` survive the task's exec (clears FD_CLOEXEC in the task's
  // process only: slurmstepd forked it).
  virtual bool KeepAcrossExec(int fd) = 0;
  // slurmstepd's init_post_opt, as root: the per-step token's key file
  // (token_key=PATH), checked and read (step_token.h, ReadTokenKey).
  virtual bool ReadTokenKey(const std::string& path, std::string* key, std::string* err) = 0;
  // task_init: `content` in a sealed memfd that survives the task's exec
  // (step_token.h, MakeSealedMemfd); its number, or -1 with *err.
  virtual int HandToTask(const std::string& content, std::string* err) = 0;
  // task_init_privileged (the task's process, root, on the host: before a
  // container plugin's task_init_privileged enters the image): starts
  // `program host-runner --fd=3` (launcher/host_runner.h) as the job's user, in a
  // session of its own, not a child of the task, with the node's PATH; returns
  // this process's end of its socket (close-on-exec), or -1 with *err.
  virtual int StartHostRunner(const std::string& program, std::string* err) = 0;
  // The same for Slurm's OCI containers, whose runtime passes no descriptor of the
  // task's: `program host-runner --listen-fd=3 --task-pidfd=4`, listening on the
  // abstract unix socket `@PREFIX.RANDOM` (host networking: the container shares
  // the node's network namespace) and ending with this task's process; *name is
  // that "@..." name for the agent, or false with *err.
  virtual bool StartListeningHostRunner(const std::string& program, const std::string& prefix, std::string* name,
                                        std::string* err) = 0;
  // The process's own command line (/proc/self/cmdline); srun only.
  virtual std::vector<std::string> ProcessCmdline() = 0;
  // The calling process's parent (in task_init: the step's slurmstepd).
  virtual long ParentPid() = 0;
  // The job's end time (unix seconds) as the controller has it now
  // (slurm_get_end_time, one RPC): srun, and slurmstepd's init_post_opt. False
  // when Slurm does not say.
  virtual bool JobEndTime(uint32_t job_id, int64_t* end_time) = 0;
  virtual SlurmRelease Release() = 0;
  // srun: the job `job_id` and its running steps (slurm_load_job,
  // slurm_get_job_steps: two RPCs). A job Slurm does not know is found=false and
  // true; false with *err only when Slurm could not be asked.
  virtual bool LoadJob(uint32_t job_id, TargetJob* job, std::string* err) = 0;
  // The calling process's real uid (getuid): srun's user.
  virtual uint32_t UserId() = 0;
  // srun, before it allocated anything: ends srun with `code` (exit(3)). Used where
  // a failing callback is not enough: Slurm ignores one of an `optional` plugin,
  // and srun's own status for it is 1.
  virtual void ExitSrun(int code) = 0;
  // srun, at its exit: `scancel --name=NAME --user=UID` (the user's jobs of that
  // name, queued or running), waited for at most a few seconds. False with *err
  // when scancel could not run, did not answer or failed.
  virtual bool CancelJobsNamed(const std::string& name, std::string* err) = 0;
};

// What the plugin asks about Slurm's nodes and the network (libslurm, getaddrinfo).
class NodeDirectory {
 public:
  virtual ~NodeDirectory() = default;
  // First host of a Slurm host list ("n[1-3]" -> "n1"), via libslurm's hostlist functions.
  virtual bool FirstHost(const std::string& nodelist, std::string* host) = 0;
  // The first `limit` hosts of a Slurm host list, in order, joined with commas.
  virtual bool FirstHosts(const std::string& nodelist, size_t limit, std::string* hosts) = 0;
  // Name resolution (getaddrinfo, IPv4 preferred). *why says what failed.
  virtual bool Resolve(const std::string& host, std::string* address, std::string* why) = 0;
  // Slurm's NodeAddr of a node (slurm_load_node_single). *why says what failed.
  virtual bool SlurmNodeAddr(const std::string& node, std::string* address, std::string* why) = 0;
};

}  // namespace elastic::spank
