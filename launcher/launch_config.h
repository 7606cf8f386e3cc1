// LaunchConfig: every setting of one elasticrun invocation, the WorkerSpec (what
// to run) and the AgentSettings (how this agent runs it), parsed from the command
// line (torchrun-compatible, dashed or underscored spellings) and PET_<NAME>
// environment variables. Precedence: command line > PET_ > default.
//
// Wrapped by the SPANK plugin (docs/design.md): when ELASTIC_SPANK_ARGV0 is set,
// no option is read from argv; argv[1..] are the user's arguments, the program
// is $ELASTIC_SPANK_ARGV0 and the options come from PET_* only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/bind_mode.h"
#include "common/device_list.h"
#include "common/grow_options.h"
#include "common/nproc_spec.h"
#include "launcher/make_rendezvous.h"
#include "launcher/native_stacks.h"

namespace elastic {

using EnvMap = std::map<std::string, std::string>;

// How a worker's stdout/stderr go to files: torchrun's Std (0 none, 1 out, 2 err, 3 both).
enum StdMask : int { kStdNone = 0, kStdOut = 1, kStdErr = 2, kStdBoth = 3 };

// --redirects / --tee: one value for every local rank ("3") or per rank ("0:1,2:3").
struct StdSpec {
  int all = kStdNone;
  std::map<int, int> per_rank;
  int For(int local_rank) const {
    auto it = per_rank.find(local_rank);
    return it == per_rank.end() ? all : it->second;
  }
};

// Unset members: the variable is unset.
struct GpuLists {
  std::optional<GpuList> cuda_visible_devices;  // CUDA_VISIBLE_DEVICES
  std::optional<GpuList> step_gpus;             // SLURM_STEP_GPUS, else SLURM_JOB_GPUS
};

// What to run and the workers' contract (torchrun's WorkerSpec): the program, how
// many workers and where, the rendezvous they join, and what their environment
// says (ROLE_NAME, LOCAL_RANK, TORCHELASTIC_SIGNALS_TO_HANDLE, ...). Every node
// of a job is given the same.
struct WorkerSpec {
  // The user's command: program as given and its arguments.
  std::string program;
  std::vector<std::string> args;
  bool no_python = false;
  bool module = false;                // -m
  bool run_path = false;              // --run-path
  std::string python = "python3";     // --python
  std::vector<std::string> preload;   // --preload: modules the zygote imports (zygote.h)
  RendezvousOptions rdzv;             // the rendezvous, max_restarts included
  NprocSpec nproc_spec;               // --nproc-per-node: N|gpu|cpu|auto
  int nproc = 1;                      // resolved (ResolveNproc)
  GpuLists gpus;
  std::string role = "default";
  bool virtual_local_rank = false;
  std::vector<int> signals_to_handle;  // terminating signals: forward, stop, exit 128+sig
  // --signals-to-handle as given: the workers' TORCHELASTIC_SIGNALS_TO_HANDLE (torchrun 2.14's
  // agent sets that variable from the flag, for its workers' start_processes).
  std::string signals_to_handle_text = "SIGTERM,SIGINT,SIGHUP,SIGQUIT";
  // Binding (hwloc_binding/binding.h).
  BindMode bind = BindMode::kAuto;
  MemBind membind = MemBind::kPreferred;
  std::string topology;
  std::string cpus_allowed;
  std::string gpu_vendor;
};

// The agent's own settings: its timeouts, paths, output handling and resilience
// rules; how this node's agent runs the WorkerSpec. Every timeout of the agent is
// here, by name, with its default (those without an option are fixed: no flag
// sets them, but they are read from here, not hard-wired where they are used).
struct AgentSettings {
  long long monitor_interval_ms = 100;  // accepted for compatibility; we do not poll
  long long shutdown_timeout_ms = 30000;
  // --uninterruptible-timeout: SIGKILL to "unkillable" (stuck_worker.h); always > 0.
  long long uninterruptible_timeout_ms = 60000;
  StdSpec redirects;
  StdSpec tee;
  std::string log_dir;                // "" = a fresh directory under $TMPDIR, removed at exit
  std::string events_path;            // --events PATH: the event record ("" = none; event_writer.h)
  bool events_to_console = false;     // --event-log-handler=console
  std::vector<int> local_ranks_filter;  // empty = every local rank on the console
  std::string log_line_prefix_template;  // "" = "[rankN]: " (log_prefix.h)
  std::vector<std::string> duplicate_stdout_filters;  // duplicate_filter.h ({}: none)
  std::vector<std::string> duplicate_stderr_filters;
  bool verbose = false;
  int crash_loop_count = 3;                // --crash-loop-count; 0 = never end early (crash_loop.h)
  long long crash_loop_window_ms = 60000;  // --crash-loop-window
  std::string progress_file;               // --progress-file ("" = none; no_progress.h)
  int no_progress_restarts = 3;            // --no-progress-restarts; 0 = never
  std::string health_check;                  // --health-check PROG ("" = none; health_check.h)
  long long health_check_timeout_ms = 60000;  // --health-check-timeout
  long long slurm_comment_interval_ms = 30000;  // --slurm-comment-interval (job_comment.h); 0 = off
  int requeue = 0;                            // --requeue N: most requeues (requeue.h); 0 = never
  std::optional<GrowOptions> grow;            // --grow OPTIONS (grow_keeper.h); unset = off
  NativeStacksMode native_stacks = NativeStacksMode::kAuto;  // --native-stacks (native_stacks.h)
  long long native_stacks_timeout_ms = 15000;                // --native-stacks-timeout
  long long console_drain_timeout_ms = 10000;  // --console-drain-timeout (console.h)
  // Fixed deadlines: no option sets them; named here rather than hard-wired where used.
  // The preloaded interpreter's imports (zygote.h): a shared file system can be slow.
  long long zygote_ready_timeout_ms = 300000;
  // The preloaded interpreter's answer to one worker's fork request (zygote.h).
  long long zygote_spawn_timeout_ms = 10000;
  // A hung worker still alive this long after SIGABRT (its Python stacks) is SIGKILLed
  // (hung_worker.h).
  long long stack_dump_grace_ms = 5000;
  // A crash loop seen here waits this long for the rendezvous host's word before this
  // node ends the job by itself (crash_loop.h).
  long long crash_loop_answer_timeout_ms = 10000;
  // One read of --progress-file after a failed round (no_progress.h).
  long long progress_read_timeout_ms = 10000;
  // One `scontrol update` of the job's Comment (job_comment.h).
  long long slurm_comment_timeout_ms = 10000;
  // A node whose --health-check failed checks again after this (health_check.h)...
  long long health_check_recheck_ms = 10000;
  // ...and gives up (exit 1) once its checks have failed for this long.
  long long health_check_give_up_ms = 600000;
  // One `scontrol show node` of this node's state (slurm_node_state.h)...
  long long node_state_timeout_ms = 10000;
  // ...asked again this often while this node stands by for that state; an answer
  // younger than node_state_min_interval_ms is reused.
  long long node_state_recheck_ms = 10000;
  long long node_state_min_interval_ms = 5000;
  // `scontrol requeue` of the job (--requeue, requeue.h).
  long long requeue_timeout_ms = 30000;
  // One squeue, sbatch or scancel of --grow's helper jobs (grow_keeper.h).
  long long grow_timeout_ms = 30000;
  // The least time a worker's leftovers (its own children) get to die after SIGKILL,
  // even with --shutdown-timeout=0.
  long long min_kill_wait_ms = 1000;
  // `PYTHON -c 'import torch'` before the run (interpreter_check.h): a cold
  // interpreter on a shared file system.
  long long interpreter_check_timeout_ms = 10000;
  // One task per GPU (task_group.h): task 0 waits this long for the other tasks of
  // its node to report...
  long long task_records_timeout_ms = 60000;
  // ...and they wait this long for task 0's agent to start.
  long long task_agent_start_timeout_ms = 120000;
  // The guardian (guardian.h) waits this long for what the agent left below it to die
  // after SIGKILL: a process in uninterruptible sleep (a GPU driver freeing memory, a
  // hung NFS read) dies only when the kernel call returns. The guardian runs before
  // the command line is parsed: it reads this default.
  long long guardian_kill_timeout_ms = 30000;
  // `elasticrun status`: connecting to the rendezvous host, and its whole answer.
  long long status_connect_timeout_ms = 5000;
  long long status_deadline_ms = 15000;
  std::string print_binding;          // "", "table" or "json": print the plan and exit
  bool spank_wrapped = false;         // ELASTIC_SPANK_ARGV0 was set
  // The job's end time under Slurm (unix seconds): SLURM_JOB_END_TIME, else the
  // plugin's ELASTIC_JOB_END_TIME (launcher/slurm_stop.h). Tells the time limit's SIGTERM.
  std::optional<int64_t> job_end_time;
};

// One elasticrun invocation: the workers' spec and this agent's settings.
struct LaunchConfig {
  WorkerSpec spec;
  AgentSettings agent;
  // One line each, printed once before the run: torchrun options accepted without
  // a meaning here (launch_convert.cc, ConvertTorchrunOnly).
  std::vector<std::string> warnings;
};

enum class ParseOutcome { kRun, kExitOk, kUsageError };

// Parses argv + env. kExitOk: --help/--version printed to *out. kUsageError:
// *err names the option and the value (exit 2).
ParseOutcome ParseLaunchConfig(int argc, const char* const* argv, const EnvMap& env,
                               LaunchConfig* config, std::string* out, std::string* err);

// The environment of this process as a map.
EnvMap CurrentEnv();

}  // namespace elastic
