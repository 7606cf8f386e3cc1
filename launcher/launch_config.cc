#include "launcher/launch_config.h"
#include "launcher/slurm_stop.h"

#include "elastic_version.h"
#include "rendezvous/rendezvous_settings.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cctype>
#include <fmt/format.h>
#include <functional>
#include <random>

#include "common/endpoint.h"
#include "common/log_escape.h"
#include "common/module_list.h"
#include "common/node_range.h"
#include "common/parse.h"
#include "common/peer_list.h"
#include "launcher/completion.h"
#include "launcher/duplicate_filter.h"
#include "launcher/option_values.h"
#include "launcher/stuck_worker.h"

extern char** environ;

namespace elastic {
namespace {

// Every option, by name in the code: a misspelt one does not compile (values are
// looked up by this index, not by a string).
enum class Opt : size_t {
  kStandalone, kNnodes, kNprocPerNode, kNodeRank, kMaxRestarts, kMonitorInterval,
  kRdzvBackend, kRdzvEndpoint, kRdzvId, kRdzvConf, kLocalAddr, kRole, kRedirects, kTee,
  kLogDir, kLocalRanksFilter, kNoPython, kModule, kRunPath, kSignalsToHandle,
  kShutdownTimeout, kUninterruptibleTimeout, kVirtualLocalRank, kPython, kPreload, kBind, kMembind, kTopology, kCpusAllowed,
  kGpuVendor, kVerbose, kCrashLoopCount, kCrashLoopWindow, kProgressFile, kNoProgressRestarts, kHealthCheck, kHealthCheckTimeout,
  kNodeMultiple,
  kRequeue, kSlurmCommentInterval,
  kNativeStacks, kNativeStacksTimeout,
  kConsoleDrainTimeout,
  kEvents,
  kMasterAddr, kMasterPort, kStartMethod, kLogLinePrefixTemplate,
  kEventLogHandler, kDuplicateStdoutFilters, kDuplicateStderrFilters, kLogsSpecs, kNumaBinding,
  kCount
};

// One row per option: its spellings, the PET_ variable, the default and the help.
struct OptionDef {
  Opt id;             // its row: kOptions[id]
  const char* names;  // CLI11 names: "-r,--redirects"
  const char* dest;   // torchrun's dest; PET_<DEST upper-cased> is its variable
  const char* def;    // default as text ("" = none)
  bool flag;
  const char* help;
};

constexpr OptionDef kOptions[] = {
    {Opt::kStandalone, "--standalone", "standalone", "", true,
     "Single-node run with a local rendezvous (implies --nnodes=1)."},
    {Opt::kNnodes, "--nnodes", "nnodes", "1", false, "Number of nodes: N or MIN:MAX."},
    {Opt::kNprocPerNode, "--nproc-per-node,--nproc_per_node", "nproc_per_node", "1", false,
     "Workers on this node: N, gpu (GPUs of this node; error if none), cpu (CPUs this "
     "process may use), auto (gpu count if any, else cpu count). GPUs come from "
     "CUDA_VISIBLE_DEVICES, else SLURM_STEP_GPUS/SLURM_JOB_GPUS, else hwloc."},
    {Opt::kNodeRank, "--node-rank,--node_rank", "node_rank", "", false,
     "Preferred rank of this node (default: assigned by the rendezvous)."},
    {Opt::kMaxRestarts, "--max-restarts,--max_restarts", "max_restarts", "0", false,
     "Restarts of the worker group after failures before the job fails."},
    {Opt::kMonitorInterval, "--monitor-interval,--monitor_interval", "monitor_interval", "0.1", false,
     "Accepted for torchrun compatibility; elasticrun does not poll (seconds)."},
    {Opt::kRdzvBackend, "--rdzv-backend,--rdzv_backend", "rdzv_backend", "static", false,
     "Rendezvous backend: static (torchrun's default: the endpoint is --master-addr:--master-port "
     "unless --rdzv-endpoint is given) or c10d; both are elasticrun's own elastic rendezvous. "
     "etcd and etcd-v2 are refused (use c10d: it needs no server)."},
    {Opt::kRdzvEndpoint, "--rdzv-endpoint,--rdzv_endpoint", "rdzv_endpoint", "", false,
     "Rendezvous endpoint HOST[:PORT] (default port 29400); port 0: a free port (one node only)."},
    {Opt::kRdzvId, "--rdzv-id,--rdzv_id", "rdzv_id", "none", false,
     "Job id shared by all nodes (TORCHELASTIC_RUN_ID)."},
    {Opt::kRdzvConf, "--rdzv-conf,--rdzv_conf", "rdzv_conf", "", false,
     "Rendezvous settings key=value,... (keys below; unknown keys are ignored with a warning, "
     "as torchrun ignores them)."},
    {Opt::kLocalAddr, "--local-addr,--local_addr", "local_addr", "", false,
     "Address of this node as seen by the others (default: its hostname)."},
    {Opt::kRole, "--role", "role", "default", false, "Role name of the workers (ROLE_NAME)."},
    {Opt::kRedirects, "-r,--redirects", "redirects", "0", false,
     "Send worker output to files only: 0 none, 1 stdout, 2 stderr, 3 both; one value "
     "or per local rank (0:1,1:3)."},
    {Opt::kTee, "-t,--tee", "tee", "0", false,
     "Copy worker output to files as well as the console; same values as --redirects."},
    {Opt::kLogDir, "--log-dir,--log_dir", "log_dir", "", false,
     "Directory for LOG_DIR/attempt_N/LOCAL_RANK/{stdout.log,stderr.log,error.json} "
     "(default: a fresh directory under $TMPDIR, removed at exit)."},
    {Opt::kLocalRanksFilter, "--local-ranks-filter,--local_ranks_filter", "local_ranks_filter", "", false,
     "Only these local ranks' output on the console, e.g. 0,3 (default: all)."},
    {Opt::kNoPython, "--no-python,--no_python", "no_python", "", true,
     "Execute the program directly, even if it ends in .py."},
    {Opt::kModule, "-m,--module", "module", "", true, "Run the program as a Python module (python -m)."},
    {Opt::kRunPath, "--run-path,--run_path", "run_path", "", true, "Run the program as a Python script."},
    {Opt::kSignalsToHandle, "--signals-to-handle,--signals_to_handle", "signals_to_handle",
     "SIGTERM,SIGINT,SIGHUP,SIGQUIT", false,
     "Signals that stop the run: forwarded to the workers, then exit 128+signal. "
     "SIGUSR1/SIGUSR2 not listed here are forwarded and the run goes on."},
    {Opt::kShutdownTimeout, "--shutdown-timeout,--shutdown_timeout", "shutdown_timeout", "30", false,
     "Seconds between the stop signal and SIGKILL when stopping workers."},
    {Opt::kUninterruptibleTimeout, "--uninterruptible-timeout,--uninterruptible_timeout",
     "uninterruptible_timeout", "60", false,
     "Seconds after SIGKILL before workers still not dead count as unkillable (uninterruptible "
     "sleep, state D: a hung filesystem or driver): their state is reported and this node leaves "
     "the job (exit 4; the others go on) instead of waiting forever. Also "
     "TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT (0 there, torchrun's 'off': the default)."},
    {Opt::kVirtualLocalRank, "--virtual-local-rank,--virtual_local_rank", "virtual_local_rank", "", true,
     "Every worker sees LOCAL_RANK=0 and only its own GPU in CUDA_VISIBLE_DEVICES."},
    {Opt::kPython, "--python", "python", "python3", false,
     "Interpreter for .py programs and -m (looked up in PATH; it must have torch)."},
    {Opt::kPreload, "--preload", "preload", "", false,
     "Python modules to import once per node, e.g. torch,numpy: every worker of every round "
     "is forked from that interpreter instead of starting Python (docs/elasticrun.md, "
     "\"Preloading\")."},
    {Opt::kBind, "--bind", "bind", "auto", false,
     "CPU/memory binding per worker: auto (gpu if GPUs, else numa), gpu, gpu-exclusive, "
     "numa, none."},
    {Opt::kMembind, "--membind", "membind", "preferred", false, "Memory policy: preferred, strict, none."},
    {Opt::kTopology, "--topology", "topology", "", false,
     "hwloc XML topology to plan with instead of this machine's (testing)."},
    {Opt::kCpusAllowed, "--cpus-allowed,--cpus_allowed", "cpus_allowed", "", false,
     "Restrict binding to these CPUs, e.g. 0-15,32-47."},
    {Opt::kGpuVendor, "--gpu-vendor,--gpu_vendor", "gpu_vendor", "", false,
     "GPU vendor for hwloc discovery: nvidia or amd (default: nvidia if the node has NVIDIA GPUs, else amd)."},
    {Opt::kVerbose, "-v,--verbose", "verbose", "", true, "Log what the agent does."},
    {Opt::kCrashLoopCount, "--crash-loop-count,--crash_loop_count", "crash_loop_count", "3", false,
     "End the job (exit 2) when the workers fail within --crash-loop-window of their start "
     "this many rounds in a row; 0: never."},
    {Opt::kCrashLoopWindow, "--crash-loop-window,--crash_loop_window", "crash_loop_window", "60", false,
     "Seconds from the workers' start within which a failure counts toward a crash loop."},
    {Opt::kProgressFile, "--progress-file,--progress_file", "progress_file", "", false,
     "A file the workers write their progress to as an iteration number (e.g. the checkpoint "
     "iteration file: Megatron's latest_checkpointed_iteration.txt, NVRx's): read on the node of "
     "group rank 0 after each failed round; --no-progress-restarts failed rounds in a row without "
     "that number growing end the job (exit 5: do not requeue)."},
    {Opt::kNoProgressRestarts, "--no-progress-restarts,--no_progress_restarts", "no_progress_restarts", "3",
     false, "With --progress-file: failed rounds in a row without progress that end the job; 0: never."},
    {Opt::kHealthCheck, "--health-check,--health_check", "health_check", "", false,
     "Shell command run on this node before it joins each round; a non-zero exit or a "
     "timeout keeps the node out and it checks again every 10 s (output in "
     "LOG_DIR/health_check.log); meanwhile it stays connected and exits when the job ends."},
    {Opt::kHealthCheckTimeout, "--health-check-timeout,--health_check_timeout", "health_check_timeout", "60", false,
     "Seconds a --health-check may run before it is killed and counts as failed."},
    {Opt::kNodeMultiple, "--node-multiple,--node_multiple", "node_multiple", "1", false,
     "Rounds form only with a multiple of K nodes (tensor/pipeline parallelism); nodes "
     "beyond the largest multiple, or beyond MAX of --nnodes, stand by as spares and "
     "take a lost node's place. 1..MAX; MIN..MAX must hold a multiple of K."},
    {Opt::kRequeue, "--requeue", "requeue", "0", false,
     "In a batch job (sbatch): when the job cannot go on in-job (fewer than MIN nodes left, or "
     "the restarts used up by node losses), ask Slurm to requeue it (scontrol requeue), at most "
     "N times in the job's life (Slurm counts them in SLURM_RESTART_COUNT); 0: never."},
    // 30 s: each job's host sends slurmctld at most one update per 30 s (and the final
    // one). On a 10,000-node cluster with 1,000 elastic jobs recovering at once that is
    // at most ~33 updates a second, a small share of what slurmctld serves; a job that
    // recovers in seconds still shows its new round within 30 s (job_comment.h).
    {Opt::kSlurmCommentInterval, "--slurm-comment-interval,--slurm_comment_interval", "slurm_comment_interval",
     "30", false,
     "Under Slurm: the rendezvous host writes the job's live state to the job's Comment "
     "(squeue -O jobid,comment; docs/admin.md), at most once per SECONDS (the newest state wins) "
     "and once at the end; 0: never."},
    {Opt::kNativeStacks, "--native-stacks,--native_stacks", "native_stacks", "auto", false,
     "A worker whose FileTimerClient timer expired (TORCHELASTIC_ENABLE_FILE_TIMER=1) first has "
     "its native frames dumped, before SIGABRT dumps its Python stacks: auto (py-spy if on PATH, "
     "else gdb, else none), py-spy, gdb or off (in LOG_DIR/attempt_N/LOCAL_RANK/native_stacks.log)."},
    {Opt::kNativeStacksTimeout, "--native-stacks-timeout,--native_stacks_timeout", "native_stacks_timeout",
     "15", false, "Seconds the --native-stacks tool may run before it is killed (the Python stacks "
     "still follow)."},
    {Opt::kConsoleDrainTimeout, "--console-drain-timeout,--console_drain_timeout", "console_drain_timeout",
     "10", false, "Seconds the agent waits at exit for a full console (stdout/stderr) to take the "
     "worker output it still holds; the rest is dropped with a warning."},
    {Opt::kEvents, "--events", "events", "", false,
     "Append the job's event record to PATH: one JSON object per line (rounds, failures, nodes "
     "lost, the end; docs/user.md \"Event record\"), written by the rendezvous host (by its "
     "successor after a takeover). Every node opens PATH at start: an unwritable path is an "
     "error before anything runs. Under --log-dir the record is also LOG_DIR/events.jsonl."},
    {Opt::kMasterAddr, "--master-addr,--master_addr", "master_addr", "127.0.0.1", false,
     "Static backend (torchrun's recipe with --node-rank): the address of node rank 0, where the "
     "rendezvous is hosted (IPv6 as [ADDR]); unused with --rdzv-endpoint or on one node."},
    {Opt::kMasterPort, "--master-port,--master_port", "master_port", "29500", false,
     "Static backend: the rendezvous port on --master-addr. On one node a free port is used "
     "instead (as torchrun since 2.10); workers' MASTER_PORT is the agent's store, on a port of its own."},
    {Opt::kStartMethod, "--start-method,--start_method", "start_method", "spawn", false,
     "spawn, fork or forkserver: accepted for torchrun compatibility, no effect (as torchrun's "
     "for a program: every worker is its own process; see --preload)."},
    {Opt::kLogLinePrefixTemplate, "--log-line-prefix-template,--log_line_prefix_template",
     "log_line_prefix_template", "", false,
     "Prefix of each worker's console lines instead of \"[rankN]: \", with ${role_name}, ${rank}, "
     "${local_rank} and ${hostname} replaced (torchrun's; also TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE)."},
    // torchrun 2.x options without a meaning here: accepted, with one warning when set.
    {Opt::kEventLogHandler, "--event-log-handler,--event_log_handler", "event_log_handler", "null", false,
"torchrun's event logging handler: console prints each event of the record (--events) on "
     "the host's console; null and dynamic_rendezvous: nothing; others are ignored with a warning."},
    {Opt::kDuplicateStdoutFilters, "--duplicate-stdout-filters,--duplicate_stdout_filters",
     "duplicate_stdout_filters", "", false,
     "Also write the workers' stdout lines that contain one of these comma-separated filters (,, "
     "is a comma) to LOG_DIR/attempt_N/filtered_stdout.log, with their prefix (torchrun's)."},
    {Opt::kDuplicateStderrFilters, "--duplicate-stderr-filters,--duplicate_stderr_filters",
     "duplicate_stderr_filters", "", false, "The same for stderr: LOG_DIR/attempt_N/filtered_stderr.log."},
    {Opt::kLogsSpecs, "--logs-specs,--logs_specs", "logs_specs", "", false,
     "torchrun's torchrun.logs_specs entry point: default is what elasticrun does; others are "
     "ignored with a warning (--log-dir, --redirects, --tee and --log-line-prefix-template say "
     "where output goes)."},
    {Opt::kNumaBinding, "--numa-binding,--numa_binding", "numa_binding", "", false,
     "torchrun's binding near each worker's GPU: node (--bind=gpu), exclusive (--bind=gpu-exclusive), "
     "socket or core-complex (--bind=gpu, with a warning: binding is per NUMA node here); --bind wins."},
};

// torchrun's own variables for some options, read after the option and its PET_
// variable (torchrun reads them where the flag is not given).
constexpr std::pair<Opt, const char*> kTorchrunEnv[] = {
    {Opt::kLogLinePrefixTemplate, "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"},
    {Opt::kShutdownTimeout, "TORCH_ELASTIC_SHUTDOWN_TIMEOUT"},
    {Opt::kUninterruptibleTimeout, "TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT"},
    {Opt::kPython, "PYTHON_EXEC"},
};

// Set by torchrun's agent for its workers (from --signals-to-handle), never read from
// the user: given, it is ignored with a warning, as torchrun overwrites it.
constexpr const char* kWorkerSignalsVar = "TORCHELASTIC_SIGNALS_TO_HANDLE";

constexpr bool RowsInOrder() {
  size_t i = 0;
  for (const OptionDef& def : kOptions) {
    if (static_cast<size_t>(def.id) != i++) return false;
  }
  return i == static_cast<size_t>(Opt::kCount);
}
static_assert(RowsInOrder(), "kOptions has one row per Opt, in Opt's order");

std::string PetName(const char* dest) {
  std::string name = "PET_";
  for (const char* c = dest; *c; ++c) name.push_back(static_cast<char>(std::toupper(*c)));
  return name;
}

// One option's final text and where it came from, for error messages.
struct Value {
  std::string text;
  std::string name;    // its long name: "--nnodes"
  std::string source;  // "--nnodes" or "PET_NNODES" or "" for the default
  bool given = false;
  // What an error names: where the value came from (the option for a default).
  const std::string& What() const { return source.empty() ? name : source; }
};

std::string HelpText(const OptionDef& def) {
  std::string text = def.help;
  if (def.def[0] != '\0') text += fmt::format(" [default: {}]", def.def);
  text += fmt::format(" [env: {}]", PetName(def.dest));
  return text;
}

constexpr const char* kFooter = R"(
The program: a first argument ending in .py (or -m/--run-path) runs as
`PYTHON -u program args...` (--python, default python3 from PATH; it must have
torch); anything else is executed as given (PATH lookup); --no-python forces that.

Precedence: command line > PET_<NAME> environment variable > default. Under
`srun --elastic` (ELASTIC_SPANK_ARGV0 set) options come from PET_* only.

Exit status (for batch scripts): 0 every worker succeeded; 1 the job failed:
restarts used up by a worker's failures (the summary names the worker's exit
code or signal) or an agent error; 2 do not requeue: a bad option or value
(nothing was started) or a crash loop (--crash-loop-count); 3 nodes were
lost: fewer than MIN left, the restarts used up by node losses, no majority
came back, or the rendezvous host lost or refused this agent before it was
authenticated (run id, version, token: unproven, so never "do not requeue"):
requeueing may help (--requeue N does it in a batch job); 4 this node left
the job: a worker could not be killed (--uninterruptible-timeout), the others
go on without it; 5 do not requeue: no progress (--progress-file,
--no-progress-restarts); 128+N elasticrun got terminating signal N.)";

constexpr const char* kAuthHelp = R"(

Rendezvous authentication is mutual: agent and host each prove themselves over
fresh nonces of both, with the shared token when one is set (--rdzv-conf
token_file=PATH of mode 0600, ELASTIC_RDZV_TOKEN_FILE or ELASTIC_RDZV_TOKEN; a
token on the command line is readable by every local user and is warned
about), else with a munge credential of the same user
where munged runs (every Slurm cluster with auth/munge); an agent with either
never joins a host that offers none. It keeps other users' and other jobs'
processes from joining or posing as the host; it does not encrypt the traffic.
The host logs which method is in use; a multi-node run with neither warns.
)";

// A version 4 UUID as torchrun's --standalone run id (uuid.uuid4()).
std::string RandomUuid() {
  unsigned char b[16] = {};
  std::random_device random;
  for (unsigned char& byte : b) byte = static_cast<unsigned char>(random());
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
  std::string out;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += fmt::format("{:02x}", b[i]);
  }
  return out;
}

// `torchrun ... train.py -- --depth=26`: torchrun's argparse does not hand the
// script a `--` right after the program (Debian 12's and 13's torchrun, checked
// by tests/torch/test_torchrun_compat.py); neither do we. A later `--` is the
// script's. Under srun --elastic the task's arguments stay as srun passes them.
void DropDashDashAfterProgram(std::vector<std::string>* program) {
  if (program->size() > 1 && (*program)[1] == "--") program->erase(program->begin() + 1);
}

bool TakesValue(std::string_view arg) {
  for (const OptionDef& def : kOptions) {
    if (def.flag) continue;
    for (const std::string& name : Split(def.names, ',')) {
      if (name == arg) return true;
    }
  }
  return false;
}

// `--rdzv-id= --nproc-per-node=2 train.py`: CLI11 reads an empty `--opt=` as
// `--opt` and takes the next argument as its value (here the program's name or
// the next option: issue 19 item 9). An empty value is an error naming the
// option. Scans up to the program (the first argument that is not an option or
// an option's value) or `--`.
bool CheckNoEmptyValues(int argc, const char* const* argv, std::string* err) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--" || arg.size() < 2 || arg[0] != '-') return true;
    size_t eq = arg.find('=');
    if (eq != std::string_view::npos) {
      if (eq + 1 == arg.size()) {
        *err = fmt::format("{}: empty value (give one, e.g. {}VALUE, or leave the option out)",
                           arg.substr(0, eq), arg);
        return false;
      }
      continue;
    }
    if (TakesValue(arg)) ++i;  // its value, whatever it looks like
  }
  return true;
}

class Parser {
 public:
  Parser(const EnvMap& env, LaunchConfig* config) : env_(env), c_(config) {}

  ParseOutcome Parse(int argc, const char* const* argv, std::string* out, std::string* err);

 private:
  bool Convert(std::string* err);
  bool ConvertRendezvous(std::string* err);
  bool ConvertBackend(std::string* err);
  bool ConvertTorchrunOnly(std::string* err);
  void ConvertSlurmDefaults();
  bool ConvertBinding(std::string* err);
  bool ConvertResilience(std::string* err);
  bool ConvertUninterruptibleTimeout(std::string* err);
  void ConvertGpuLists();
  const Value& V(Opt opt) const { return values_[static_cast<size_t>(opt)]; }
  const std::string& What(Opt opt) const { return V(opt).What(); }
  const std::string& Text(Opt opt) const { return V(opt).text; }
  const std::string* Env(const char* name) const {
    auto it = env_.find(name);
    return it == env_.end() ? nullptr : &it->second;
  }

  const EnvMap& env_;
  LaunchConfig* c_;
  std::array<Value, static_cast<size_t>(Opt::kCount)> values_;
};

ParseOutcome Parser::Parse(int argc, const char* const* argv, std::string* out, std::string* err) {
  CLI::App app{"elasticrun: elastic launcher for PyTorch workers (torchrun-compatible)", "elasticrun"};
  app.prefix_command();
  app.footer(std::string(kFooter) + kAuthHelp + "\n--rdzv-conf keys:\n" + RendezvousConfHelp());
  app.set_version_flag("--version", std::string("elasticrun: ") + ELASTIC_VERSION_LINE);
  app.get_formatter()->column_width(42);
  constexpr size_t kCount = sizeof(kOptions) / sizeof(kOptions[0]);
  std::vector<std::string> texts(kCount);
  std::vector<CLI::Option*> opts(kCount);
  for (size_t i = 0; i < kCount; ++i) {
    const OptionDef& def = kOptions[i];
    if (def.flag) {
      opts[i] = app.add_flag(def.names)->description(HelpText(def));
    } else {
      // A repeated option: the last one wins, as with torchrun's argparse (scripts
      // append overrides to a base command line).
      opts[i] = app.add_option(def.names, texts[i], HelpText(def))
                    ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    }
  }
  std::string completion_shell;
  CLI::Option* completion_opt =
      app.add_option("--print-completion,--print_completion", completion_shell,
                     "Print a shell completion script for elasticrun (bash, zsh or tcsh) and exit, "
                     "e.g. elasticrun --print-completion bash > ~/.local/share/bash-completion/completions/elasticrun.")
          ->check(CLI::IsMember(std::vector<std::string>(std::begin(kCompletionShells), std::end(kCompletionShells))));
  std::string print_binding;
  CLI::Option* print_opt =
      app.add_option("--print-binding,--print_binding", print_binding,
                     "Print the binding plan (table, or --print-binding=json) and exit.")
          ->expected(0, 1);

  auto spank = env_.find("ELASTIC_SPANK_ARGV0");
  c_->spank_wrapped = spank != env_.end() && !spank->second.empty();
  for (const char* name : {"SLURM_JOB_END_TIME", kJobEndTimeVar})
    if (const std::string* text = Env(name); text && !c_->job_end_time)
      c_->job_end_time = ParseJobEndTime(*text);
  std::vector<std::string> program;
  try {
    if (c_->spank_wrapped) {
      const char* self[] = {argv[0]};
      app.parse(1, self);
      // Slurm < 23.11: our argv[0] replaced the task's, argv[1..] are its
      // arguments. Slurm >= 23.11 prepends us (ELASTIC_SPANK_ARGV_PREPENDED=1):
      // argv[1] is the task's own program again (as slurmstepd resolved it).
      auto prepended = env_.find("ELASTIC_SPANK_ARGV_PREPENDED");
      int first = prepended != env_.end() && prepended->second == "1" ? 2 : 1;
      program.push_back(spank->second);
      for (int i = first; i < argc; ++i) program.emplace_back(argv[i]);
    } else {
      if (!CheckNoEmptyValues(argc, argv, err)) return ParseOutcome::kUsageError;
      app.parse(argc, argv);
      program = app.remaining();
    }
  } catch (const CLI::CallForHelp&) {
    *out = app.help();
    return ParseOutcome::kExitOk;
  } catch (const CLI::CallForVersion& e) {
    *out = e.what();
    *out += "\n";
    return ParseOutcome::kExitOk;
  } catch (const CLI::ParseError& e) {
    *err = e.what();
    return ParseOutcome::kUsageError;
  }
  for (size_t i = 0; i < kCount; ++i) {
    const OptionDef& def = kOptions[i];
    Value& v = values_[i];
    v.name = opts[i]->get_name();
    if (opts[i]->count() > 0) {
      v.text = def.flag ? "1" : texts[i];
      v.source = v.name;
      v.given = true;
    } else if (auto it = env_.find(PetName(def.dest)); it != env_.end()) {
      v.text = it->second;
      v.source = PetName(def.dest);
      v.given = true;
    } else {
      v.text = def.def;
    }
  }
  for (const auto& [opt, name] : kTorchrunEnv) {
    Value& v = values_[static_cast<size_t>(opt)];
    if (auto it = env_.find(name); !v.given && it != env_.end()) {
      v.text = it->second;
      v.source = name;
      v.given = true;
    }
  }
  if (completion_opt->count() > 0) {
    std::vector<std::string> names;
    for (const CLI::Option* opt : app.get_options()) {
      for (const std::string& name : opt->get_lnames()) names.push_back("--" + name);
      for (const std::string& name : opt->get_snames()) names.push_back("-" + name);
    }
    *out = CompletionScript(completion_shell, names);
    return ParseOutcome::kExitOk;
  }
  if (print_opt->count() > 0) {
    c_->print_binding = print_binding.empty() ? "table" : print_binding;
    if (!OneOf("--print-binding", c_->print_binding, {"table", "json"}, err)) {
      return ParseOutcome::kUsageError;
    }
  }
  if (!program.empty() && program.front() == "--") {
    program.erase(program.begin());
    DropDashDashAfterProgram(&program);
  } else if (!program.empty() && !c_->spank_wrapped && program.front().size() > 1 &&
             program.front()[0] == '-') {
    // CLI11's prefix mode passes unknown options through as the "program".
    *err = fmt::format("unknown option '{}' (see --help; put -- before a program whose name starts with -)",
                       program.front());
    return ParseOutcome::kUsageError;
  }
  if (!c_->spank_wrapped) DropDashDashAfterProgram(&program);
  if (!program.empty()) {
    c_->program = program.front();
    c_->args.assign(program.begin() + 1, program.end());
  }
  if (!Convert(err)) return ParseOutcome::kUsageError;
  if (c_->program.empty() && c_->print_binding.empty()) {
    *err = "missing the program to run (e.g. elasticrun --nproc-per-node=4 train.py); see --help";
    return ParseOutcome::kUsageError;
  }
  return ParseOutcome::kRun;
}

bool Parser::Convert(std::string* err) {
  auto flag = [&](Opt opt, bool* out) { return ParseBool(What(opt), Text(opt), out, err); };
  if (!flag(Opt::kNoPython, &c_->no_python) || !flag(Opt::kModule, &c_->module) ||
      !flag(Opt::kRunPath, &c_->run_path) || !flag(Opt::kVirtualLocalRank, &c_->virtual_local_rank) ||
      !flag(Opt::kVerbose, &c_->verbose)) {
    return false;
  }
  if (c_->module && c_->no_python) {
    *err = "-m/--module: cannot be combined with --no-python";
    return false;
  }
  if (!ParseNprocSpec(What(Opt::kNprocPerNode), Text(Opt::kNprocPerNode), &c_->nproc_spec, err)) {
    return false;
  }
  if (c_->nproc_spec.kind == NprocSpec::Kind::kCount) c_->nproc = c_->nproc_spec.count;
  if (!ParseSeconds(What(Opt::kMonitorInterval), Text(Opt::kMonitorInterval), &c_->monitor_interval_ms,
                    err) ||
      !ParseSeconds(What(Opt::kShutdownTimeout), Text(Opt::kShutdownTimeout), &c_->shutdown_timeout_ms,
                    err)) {
    return false;
  }
  c_->role = Text(Opt::kRole);
  if (c_->role.empty()) {
    *err = What(Opt::kRole) + ": must not be empty";
    return false;
  }
  if (!ParseStdSpec(What(Opt::kRedirects), Text(Opt::kRedirects), &c_->redirects, err) ||
      !ParseStdSpec(What(Opt::kTee), Text(Opt::kTee), &c_->tee, err) ||
      !ParseRankList(What(Opt::kLocalRanksFilter), Text(Opt::kLocalRanksFilter), &c_->local_ranks_filter,
                     err) ||
      !ParseSignals(What(Opt::kSignalsToHandle), Text(Opt::kSignalsToHandle), &c_->signals_to_handle, err)) {
    return false;
  }
  c_->signals_to_handle_text = Text(Opt::kSignalsToHandle);
  if (const std::string* given = Env(kWorkerSignalsVar); given && *given != c_->signals_to_handle_text) {
    c_->warnings.push_back(fmt::format("{}={}: ignored, as torchrun does (it sets the variable for its workers "
                                       "from --signals-to-handle); the workers get {}; use --signals-to-handle "
                                       "or PET_SIGNALS_TO_HANDLE", kWorkerSignalsVar, EscapeForLog(*given),
                                       c_->signals_to_handle_text));
  }
  c_->log_dir = Text(Opt::kLogDir);
  c_->events_path = Text(Opt::kEvents);
  c_->log_line_prefix_template = Text(Opt::kLogLinePrefixTemplate);
  if (!ConvertTorchrunOnly(err)) return false;
  c_->python = Text(Opt::kPython);
  if (c_->python.empty()) {
    *err = What(Opt::kPython) + ": must not be empty";
    return false;
  }
  ConvertGpuLists();
  if (!ParseModuleList(What(Opt::kPreload), Text(Opt::kPreload), &c_->preload, err)) return false;
  return ConvertRendezvous(err) && ConvertBinding(err) && ConvertResilience(err);
}

// torchrun's options that mean nothing here (one warning each when set), and
// --numa-binding as a --bind default.
bool Parser::ConvertTorchrunOnly(std::string* err) {
  auto& warnings = c_->warnings;
  // torchrun's handlers (torch.distributed.elastic.events.handlers): console logs
  // each event, null and dynamic_rendezvous drop them.
  const std::string& handler = Text(Opt::kEventLogHandler);
  c_->events_to_console = handler == "console";
  if (handler != "null" && handler != "dynamic_rendezvous" && handler != "console") {
    warnings.push_back(fmt::format("{}: '{}' ignored: elasticrun's handlers are console and null (its "
                                   "event record: --events)",
                                   What(Opt::kEventLogHandler), handler));
  }
  c_->duplicate_stdout_filters = ParseDuplicateFilters(Text(Opt::kDuplicateStdoutFilters));
  c_->duplicate_stderr_filters = ParseDuplicateFilters(Text(Opt::kDuplicateStderrFilters));
  // torch registers one entry point, `default` (DefaultLogsSpecs): what elasticrun does.
  if (!Text(Opt::kLogsSpecs).empty() && Text(Opt::kLogsSpecs) != "default") {
    warnings.push_back(fmt::format("{}: '{}' ignored: elasticrun has no torchrun.logs_specs entry points "
                                   "(--log-dir, --redirects, --tee, --log-line-prefix-template)",
                                   What(Opt::kLogsSpecs), Text(Opt::kLogsSpecs)));
  }
  const std::string& numa = Text(Opt::kNumaBinding);
  if (numa.empty()) return true;
  if (!OneOf(What(Opt::kNumaBinding), numa, {"node", "socket", "exclusive", "core-complex"}, err)) return false;
  if (V(Opt::kBind).given) {
    warnings.push_back(fmt::format("{}={}: ignored: {} says how to bind", What(Opt::kNumaBinding), numa,
                                   What(Opt::kBind)));
    return true;
  }
  if (numa == "socket" || numa == "core-complex") {
    warnings.push_back(fmt::format("{}={}: binding each worker to the CPUs of its GPU's NUMA node instead "
                                   "(--bind=gpu; elasticrun binds per NUMA node)",
                                   What(Opt::kNumaBinding), numa));
  }
  values_[static_cast<size_t>(Opt::kBind)].text = numa == "exclusive" ? "gpu-exclusive" : "gpu";
  values_[static_cast<size_t>(Opt::kBind)].source = What(Opt::kNumaBinding);
  return true;
}

bool Parser::ConvertResilience(std::string* err) {
  long long n = 0;
  if (!ParseIntNamed(What(Opt::kCrashLoopCount), Text(Opt::kCrashLoopCount), 0, 1000000, &n, err) ||
      !ParseSeconds(What(Opt::kCrashLoopWindow), Text(Opt::kCrashLoopWindow), &c_->crash_loop_window_ms, err) ||
      !ParseSeconds(What(Opt::kHealthCheckTimeout), Text(Opt::kHealthCheckTimeout),
                    &c_->health_check_timeout_ms, err)) {
    return false;
  }
  c_->crash_loop_count = static_cast<int>(n);
  if (!ParseIntNamed(What(Opt::kNoProgressRestarts), Text(Opt::kNoProgressRestarts), 0, 1000000, &n, err)) return false;
  c_->no_progress_restarts = static_cast<int>(n);
  c_->progress_file = Text(Opt::kProgressFile);
  if (!ConvertUninterruptibleTimeout(err)) return false;
  if (!ParseIntNamed(What(Opt::kRequeue), Text(Opt::kRequeue), 0, 1000000, &n, err)) return false;
  c_->requeue = static_cast<int>(n);
  if (!ParseSeconds(What(Opt::kSlurmCommentInterval), Text(Opt::kSlurmCommentInterval),
                    &c_->slurm_comment_interval_ms, err))
    return false;
  if (c_->health_check_timeout_ms <= 0) {
    *err = fmt::format("{}: '{}': must be more than 0 seconds", What(Opt::kHealthCheckTimeout),
                       Text(Opt::kHealthCheckTimeout));
    return false;
  }
  c_->health_check = Text(Opt::kHealthCheck);
  if (!ParseNativeStacksMode(What(Opt::kNativeStacks), Text(Opt::kNativeStacks), &c_->native_stacks, err) ||
      !ParseSeconds(What(Opt::kNativeStacksTimeout), Text(Opt::kNativeStacksTimeout),
                    &c_->native_stacks_timeout_ms, err)) {
    return false;
  }
  if (c_->native_stacks_timeout_ms <= 0) {
    *err = fmt::format("{}: '{}': must be more than 0 seconds", What(Opt::kNativeStacksTimeout),
                       Text(Opt::kNativeStacksTimeout));
    return false;
  }
  return ParseSeconds(What(Opt::kConsoleDrainTimeout), Text(Opt::kConsoleDrainTimeout),
                      &c_->console_drain_timeout_ms, err);
}

// torchrun reads TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT (seconds; unset or 0: no
// check). Here every wait has a deadline: torchrun's 0 is the default, said once.
bool Parser::ConvertUninterruptibleTimeout(std::string* err) {
  const Value& v = V(Opt::kUninterruptibleTimeout);
  long long ms = 0;
  if (!ParseSeconds(v.What(), v.text, &ms, err)) return false;
  if (ms <= 0 && v.source == "TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT") {
    c_->warnings.push_back(fmt::format("{}={}: torchrun's 'no check'; elasticrun never waits for a kill "
                                       "without a deadline: {} s after SIGKILL", v.source, v.text,
                                       kDefaultUninterruptibleTimeoutMs / 1000));
    ms = kDefaultUninterruptibleTimeoutMs;
  } else if (ms <= 0) {
    *err = fmt::format("{}: '{}': must be more than 0 seconds", v.What(), v.text);
    return false;
  }
  c_->uninterruptible_timeout_ms = ms;
  return true;
}

bool Parser::ConvertRendezvous(std::string* err) {
  RendezvousOptions& r = c_->rdzv;
  NodeRange nodes;
  if (!ParseBool(What(Opt::kStandalone), Text(Opt::kStandalone), &r.standalone, err) ||
      !ParseNodeRange(What(Opt::kNnodes), Text(Opt::kNnodes), &nodes, err)) {
    return false;
  }
  r.min_nodes = nodes.min;
  r.max_nodes = nodes.max;
  long long n = 0;
  if (V(Opt::kNodeRank).given) {
    if (!ParseIntNamed(What(Opt::kNodeRank), Text(Opt::kNodeRank), 0, 100000, &n, err)) return false;
    r.node_rank = static_cast<int>(n);
  }
  if (!ParseIntNamed(What(Opt::kMaxRestarts), Text(Opt::kMaxRestarts), 0, 1000000, &n, err)) return false;
  r.max_restarts = static_cast<int>(n);
  if (!ParseNodeMultiple(What(Opt::kNodeMultiple), Text(Opt::kNodeMultiple), nodes,
                         &r.node_multiple, err))
    return false;
  if (!ConvertBackend(err)) return false;
  r.run_id = Text(Opt::kRdzvId);
  // Every node prints and compares the run id: the protocol's rule, here at the
  // edge, not as "bad 'challenge' message" on the other nodes later (issue 19 item 10).
  if (!CheckProtocolName(What(Opt::kRdzvId), r.run_id, err)) return false;
  if (!ParseKeyValues(What(Opt::kRdzvConf), Text(Opt::kRdzvConf), &r.conf, err)) return false;
  r.local_addr = Text(Opt::kLocalAddr);
  if (const std::string* token = Env("ELASTIC_RDZV_TOKEN")) r.token = *token;
  if (const std::string* file = Env("ELASTIC_RDZV_TOKEN_FILE")) r.token_file = *file;
  // The run's candidate nodes, asked before hosting or joining the endpoint (issue 19
  // item 17; under srun the plugin sets it: rendezvous/host_discovery.h).
  if (const std::string* peers = Env("ELASTIC_RDZV_PEERS"); peers && !ParsePeerList(*peers, &r.peers, err))
    return false;
  // A command line is world-readable (/proc/PID/cmdline); PET_RDZV_CONF, the
  // plugin's path, is in the environment, readable by this user only.
  for (const auto& [key, value] : r.conf)
    if (key == "token" && V(Opt::kRdzvConf).source == V(Opt::kRdzvConf).name) r.token_in_argv = true;
  if (r.standalone) {
    // torchrun: --standalone means one node with a private local rendezvous and
    // a fresh run id (a uuid4) whatever --rdzv-id says.
    r.min_nodes = r.max_nodes = 1;
    r.backend = "c10d";
    r.endpoint.reset();
    r.run_id = RandomUuid();
  }
  ConvertSlurmDefaults();
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) r.hostname = host;
  return true;
}

// --rdzv-backend and where the rendezvous is. static (torchrun's default) and c10d
// are both elasticrun's rendezvous; static takes its endpoint from --master-addr
// and --master-port when --rdzv-endpoint is not given (torchrun's rule), and only
// when there is something to say: a static backend named or --master-addr given
// (else a multi-node run without an endpoint keeps its clear error).
bool Parser::ConvertBackend(std::string* err) {
  RendezvousOptions& r = c_->rdzv;
  r.backend = Text(Opt::kRdzvBackend);
  if (r.backend == "etcd" || r.backend == "etcd-v2") {
    *err = fmt::format(
        "{}: '{}': elasticrun has no etcd rendezvous; use --rdzv-backend=c10d --rdzv-endpoint=HOST:PORT "
        "(elasticrun's own rendezvous: one agent hosts it, no etcd server needed, and it fails over)",
        What(Opt::kRdzvBackend), r.backend);
    return false;
  }
  if (!OneOf(What(Opt::kRdzvBackend), r.backend, {"static", "c10d"}, err)) return false;
  if (!OneOf(What(Opt::kStartMethod), Text(Opt::kStartMethod), {"spawn", "fork", "forkserver"}, err)) {
    return false;
  }
  if (!Text(Opt::kRdzvEndpoint).empty()) {
    Endpoint endpoint;
    if (!ParseEndpointOrFreePort(What(Opt::kRdzvEndpoint), Text(Opt::kRdzvEndpoint), &endpoint, err)) return false;
    r.endpoint = std::move(endpoint);
  }
  Endpoint master;
  if (!ParseEndpoint(What(Opt::kMasterAddr), Text(Opt::kMasterAddr), &master, err)) return false;
  if (master.port) {
    *err = fmt::format("{}: '{}': give the port with --master-port (an IPv6 address as [ADDR])",
                       What(Opt::kMasterAddr), Text(Opt::kMasterAddr));
    return false;
  }
  long long port = 0;
  if (!ParseIntNamed(What(Opt::kMasterPort), Text(Opt::kMasterPort), 0, 65535, &port, err)) return false;
  master.port = static_cast<int>(port);
  bool static_named = V(Opt::kRdzvBackend).given || V(Opt::kMasterAddr).given;
  if (!r.endpoint && r.backend == "static" && static_named && r.max_nodes > 1) r.endpoint = master;
  return true;
}

// Under Slurm (a plain `srun elasticrun`, or the plugin) the step says which node
// this is and how many are coming: defaults for --node-rank and for the
// rendezvous' expected node count (--rdzv-conf expected_nodes wins). Values that
// are not numbers, or a count outside --nnodes, are ignored.
void Parser::ConvertSlurmDefaults() {
  RendezvousOptions& r = c_->rdzv;
  long long value = 0;
  const std::string* node_id = Env("SLURM_NODEID");
  if (!V(Opt::kNodeRank).given && node_id && ParseInt(*node_id, 0, 1 << 20, &value)) {
    r.node_rank = static_cast<int>(value);
  }
  const std::string* nnodes = Env("SLURM_NNODES");
  if (nnodes && ParseInt(*nnodes, 1, 1 << 20, &value) && value >= r.min_nodes && value <= r.max_nodes) {
    r.expected_nodes = static_cast<int>(value);
  }
}

bool Parser::ConvertBinding(std::string* err) {
  c_->topology = Text(Opt::kTopology);
  c_->cpus_allowed = Text(Opt::kCpusAllowed);
  c_->gpu_vendor = Text(Opt::kGpuVendor);
  if (!ParseBindMode(What(Opt::kBind), Text(Opt::kBind), &c_->bind, err) ||
      !ParseMemBind(What(Opt::kMembind), Text(Opt::kMembind), &c_->membind, err) ||
      !ParseCpuList(What(Opt::kCpusAllowed), c_->cpus_allowed, err)) {
    return false;
  }
  if (!c_->gpu_vendor.empty() && !OneOf(What(Opt::kGpuVendor), c_->gpu_vendor, {"nvidia", "amd"}, err)) {
    return false;
  }
  if (!c_->topology.empty() && access(c_->topology.c_str(), R_OK) != 0) {
    *err = fmt::format("{}: '{}': {}", What(Opt::kTopology), c_->topology, strerror(errno));
    return false;
  }
  return true;
}

// The GPU variables, parsed once: --nproc-per-node=gpu|auto counts them and the
// binding maps them onto the topology. A list that does not parse is an error
// only where it is used (a fixed --nproc-per-node with --bind=none never reads it).
void Parser::ConvertGpuLists() {
  GpuLists& g = c_->gpus;
  if (const std::string* cvd = Env("CUDA_VISIBLE_DEVICES")) {
    g.cuda_visible_devices = ParseGpuList(DeviceListKind::kCuda, "CUDA_VISIBLE_DEVICES", *cvd);
  }
  for (const char* name : {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS"}) {
    if (const std::string* text = Env(name)) {
      g.step_gpus = ParseGpuList(DeviceListKind::kSlurm, name, *text);
      break;
    }
  }
}

}  // namespace

ParseOutcome ParseLaunchConfig(int argc, const char* const* argv, const EnvMap& env,
                               LaunchConfig* config, std::string* out, std::string* err) {
  Parser parser(env, config);
  return parser.Parse(argc, argv, out, err);
}

EnvMap CurrentEnv() {
  EnvMap env;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = strchr(*e, '=');
    if (eq == nullptr) continue;
    env.emplace(std::string(*e, eq - *e), std::string(eq + 1));
  }
  return env;
}

}  // namespace elastic
