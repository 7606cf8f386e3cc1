// The option table (option_table.h): elasticrun's columns and the plugin's, and
// the value checks both apply.
#include "common/option_table.h"

#include <cctype>
#include <vector>

#include "common/bind_mode.h"
#include "common/endpoint.h"
#include "common/grow_options.h"
#include "common/log_escape.h"
#include "common/module_list.h"
#include "common/node_range.h"
#include "common/nproc_spec.h"
#include "common/parse.h"

namespace elastic {
namespace {

// One row per option, in Opt's order. The srun rows' usage starts with
// "[elastic] " (Slurm's --help lists every plugin's options together).
constexpr OptionRow kOptionRows[] = {
    // Plugin-only rows: srun, sbatch and salloc have them, elasticrun does not.
    {Opt::kElastic, "", "", "", false,
     "Run the step's command under elasticrun, one agent per node.",
     {"elastic", "MIN:MAX|N|off",
      "[elastic] Run the step's command under elasticrun, one agent per node: MIN:MAX or N nodes "
      "(no value: exactly the step's nodes; off: disable a site or job default)", 2}},
    {Opt::kStandalone, "--standalone", "standalone", "", true,
     "Single-node run with a local rendezvous (implies --nnodes=1).", {}},
    {Opt::kNnodes, "--nnodes", "nnodes", "1", false, "Number of nodes: N or MIN:MAX.", {}},
    {Opt::kNprocPerNode, "--nproc-per-node,--nproc_per_node", "nproc_per_node", "1", false,
     "Workers on this node: N, gpu (GPUs of this node; error if none), cpu (CPUs this "
     "process may use), auto (gpu count if any, else cpu count). GPUs come from "
     "CUDA_VISIBLE_DEVICES, else SLURM_STEP_GPUS/SLURM_JOB_GPUS, else hwloc.",
     {"elastic-nproc-per-node", "N|gpu|cpu|auto",
      "[elastic] Workers per node (default: the step's GPUs on the node, else 1)", 1}},
    {Opt::kNodeRank, "--node-rank,--node_rank", "node_rank", "", false,
     "Preferred rank of this node (default: assigned by the rendezvous).", {}},
    {Opt::kMaxRestarts, "--max-restarts,--max_restarts", "max_restarts", "0", false,
     "Restarts of the worker group after failures before the job fails.",
     {"elastic-max-restarts", "N",
      "[elastic] Restarts of the worker group after a failure or a lost node (default: the "
      "site's, else the step's node count minus MIN)", 1}},
    {Opt::kMonitorInterval, "--monitor-interval,--monitor_interval", "monitor_interval", "0.1", false,
     "Accepted for torchrun compatibility; elasticrun does not poll (seconds).", {}},
    {Opt::kRdzvBackend, "--rdzv-backend,--rdzv_backend", "rdzv_backend", "static", false,
     "Rendezvous backend: static (torchrun's default: the endpoint is --master-addr:--master-port "
     "unless --rdzv-endpoint is given) or c10d; both are elasticrun's own elastic rendezvous. "
     "etcd and etcd-v2 are refused (use c10d: it needs no server).", {}},
    {Opt::kRdzvEndpoint, "--rdzv-endpoint,--rdzv_endpoint", "rdzv_endpoint", "", false,
     "Rendezvous endpoint HOST[:PORT] (default port 29400); port 0: a free port (one node only).",
     {"elastic-rdzv-endpoint", "HOST[:PORT]",
      "[elastic] Rendezvous host (default: the step's first node)", 1}},
    {Opt::kRdzvId, "--rdzv-id,--rdzv_id", "rdzv_id", "none", false,
     "Job id shared by all nodes (TORCHELASTIC_RUN_ID).",
     {"elastic-rdzv-id", "ID", "[elastic] Rendezvous id (default: JOBID.STEPID)", 1}},
    {Opt::kRdzvConf, "--rdzv-conf,--rdzv_conf", "rdzv_conf", "", false,
     "Rendezvous settings key=value,... (keys below; unknown keys are ignored with a warning, "
     "as torchrun ignores them).",
     {"elastic-rdzv-conf", "K=V,...", "[elastic] Extra rendezvous settings (elasticrun --rdzv-conf)", 1}},
    {Opt::kLocalAddr, "--local-addr,--local_addr", "local_addr", "", false,
     "Address of this node as seen by the others (default: its hostname).", {}},
    {Opt::kRole, "--role", "role", "default", false, "Role name of the workers (ROLE_NAME).", {}},
    {Opt::kRedirects, "-r,--redirects", "redirects", "0", false,
     "Send worker output to files only: 0 none, 1 stdout, 2 stderr, 3 both; one value "
     "or per local rank (0:1,1:3).", {}},
    {Opt::kTee, "-t,--tee", "tee", "0", false,
     "Copy worker output to files as well as the console; same values as --redirects.", {}},
    {Opt::kLogDir, "--log-dir,--log_dir", "log_dir", "", false,
     "Directory for LOG_DIR/attempt_N/LOCAL_RANK/{stdout.log,stderr.log,error.json} "
     "(default: a fresh directory under $TMPDIR, removed at exit).",
     {"elastic-log-dir", "DIR",
      "[elastic] Worker logs under DIR/NODE/RUN/attempt_N/LOCAL_RANK (also on the console)", 1}},
    {Opt::kLocalRanksFilter, "--local-ranks-filter,--local_ranks_filter", "local_ranks_filter", "", false,
     "Only these local ranks' output on the console, e.g. 0,3 (default: all).", {}},
    {Opt::kNoPython, "--no-python,--no_python", "no_python", "", true,
     "Execute the program directly, even if it ends in .py.",
     {"elastic-no-python", nullptr, "[elastic] Run the command as given, even a .py file", 0}},
    {Opt::kModule, "-m,--module", "module", "", true, "Run the program as a Python module (python -m).", {}},
    {Opt::kRunPath, "--run-path,--run_path", "run_path", "", true, "Run the program as a Python script.", {}},
    {Opt::kSignalsToHandle, "--signals-to-handle,--signals_to_handle", "signals_to_handle",
     "SIGTERM,SIGINT,SIGHUP,SIGQUIT", false,
     "Signals that stop the run: forwarded to the workers, then exit 128+signal. "
     "SIGUSR1/SIGUSR2 not listed here are forwarded and the run goes on.", {}},
    {Opt::kShutdownTimeout, "--shutdown-timeout,--shutdown_timeout", "shutdown_timeout", "30", false,
     "Seconds between the stop signal and SIGKILL when stopping workers.", {}},
    {Opt::kUninterruptibleTimeout, "--uninterruptible-timeout,--uninterruptible_timeout",
     "uninterruptible_timeout", "60", false,
     "Seconds after SIGKILL before workers still not dead count as unkillable (uninterruptible "
     "sleep, state D: a hung filesystem or driver): their state is reported and this node leaves "
     "the job (exit 4; the others go on) instead of waiting forever. Also "
     "TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT (0 there, torchrun's 'off': the default).", {}},
    {Opt::kVirtualLocalRank, "--virtual-local-rank,--virtual_local_rank", "virtual_local_rank", "", true,
     "Every worker sees LOCAL_RANK=0 and only its own GPU in CUDA_VISIBLE_DEVICES.", {}},
    {Opt::kPython, "--python", "python", "python3", false,
     "Interpreter for .py programs and -m (looked up in PATH; it must have torch).",
     {"elastic-python", "PATH", "[elastic] Python interpreter for a .py command (must have torch)", 1}},
    {Opt::kPreload, "--preload", "preload", "", false,
     "Python modules to import once per node, e.g. torch,numpy: every worker of every round "
     "is forked from that interpreter instead of starting Python (docs/elasticrun.md, "
     "\"Preloading\").",
     {"elastic-preload", "MODULES",
      "[elastic] Python modules (e.g. torch) imported once per node: every worker is forked from "
      "that interpreter (elasticrun --preload)", 1}},
    {Opt::kBind, "--bind", "bind", "auto", false,
     "CPU/memory binding per worker: auto (gpu if GPUs, else numa), gpu, gpu-exclusive, "
     "numa, none.",
     {"elastic-bind", "MODE", "[elastic] Worker CPU/memory binding: auto|gpu|gpu-exclusive|numa|none", 1}},
    {Opt::kMembind, "--membind", "membind", "preferred", false, "Memory policy: preferred, strict, none.", {}},
    {Opt::kTopology, "--topology", "topology", "", false,
     "hwloc XML topology to plan with instead of this machine's (testing).", {}},
    {Opt::kCpusAllowed, "--cpus-allowed,--cpus_allowed", "cpus_allowed", "", false,
     "Restrict binding to these CPUs, e.g. 0-15,32-47.", {}},
    {Opt::kGpuVendor, "--gpu-vendor,--gpu_vendor", "gpu_vendor", "", false,
     "GPU vendor for hwloc discovery: nvidia or amd (default: nvidia if the node has NVIDIA GPUs, else amd).", {}},
    {Opt::kVerbose, "-v,--verbose", "verbose", "", true, "Log what the agent does.", {}},
    {Opt::kCrashLoopCount, "--crash-loop-count,--crash_loop_count", "crash_loop_count", "3", false,
     "End the job (exit 2) when the workers fail within --crash-loop-window of their start "
     "this many rounds in a row; 0: never.", {}},
    {Opt::kCrashLoopWindow, "--crash-loop-window,--crash_loop_window", "crash_loop_window", "60", false,
     "Seconds from the workers' start within which a failure counts toward a crash loop.", {}},
    {Opt::kProgressFile, "--progress-file,--progress_file", "progress_file", "", false,
     "A file the workers write their progress to as an iteration number (e.g. the checkpoint "
     "iteration file: Megatron's latest_checkpointed_iteration.txt, NVRx's): read on the node of "
     "group rank 0 after each failed round; --no-progress-restarts failed rounds in a row without "
     "that number growing end the job (exit 5: do not requeue).", {}},
    {Opt::kNoProgressRestarts, "--no-progress-restarts,--no_progress_restarts", "no_progress_restarts", "3",
     false, "With --progress-file: failed rounds in a row without progress that end the job; 0: never.", {}},
    {Opt::kHealthCheck, "--health-check,--health_check", "health_check", "", false,
     "Shell command run on this node before it joins each round; a non-zero exit or a "
     "timeout keeps the node out and it checks again every 10 s (output in "
     "LOG_DIR/health_check.log); meanwhile it stays connected and exits when the job ends.",
     {"elastic-health-check", "PROG",
      "[elastic] Run PROG on each node before it joins a round; a failing node stays out "
      "(elasticrun --health-check)", 1}},
    {Opt::kHealthCheckTimeout, "--health-check-timeout,--health_check_timeout", "health_check_timeout", "60", false,
     "Seconds a --health-check may run before it is killed and counts as failed.", {}},
    {Opt::kNodeMultiple, "--node-multiple,--node_multiple", "node_multiple", "1", false,
     "Rounds form only with a multiple of K nodes (tensor/pipeline parallelism); nodes "
     "beyond the largest multiple, or beyond MAX of --nnodes, stand by as spares and "
     "take a lost node's place. 1..MAX; MIN..MAX must hold a multiple of K.",
     {"elastic-node-multiple", "K",
      "[elastic] Rounds form only with a multiple of K nodes; the other nodes stand by as spares "
      "(elasticrun --node-multiple)", 1}},
    {Opt::kRequeue, "--requeue", "requeue", "0", false,
     "In a batch job (sbatch): when the job cannot go on in-job (fewer than MIN nodes left, or "
     "the restarts used up by node losses), ask Slurm to requeue it (scontrol requeue), at most "
     "N times in the job's life (Slurm counts them in SLURM_RESTART_COUNT); 0: never.",
     {"elastic-requeue", "N",
      "[elastic] In a batch job: when too few nodes are left to go on, ask Slurm to requeue the "
      "job, at most N times (elasticrun --requeue; default 0, or the site's)", 1}},
    // 30 s: each job's host sends slurmctld at most one update per 30 s (and the final
    // one). On a 10,000-node cluster with 1,000 elastic jobs recovering at once that is
    // at most ~33 updates a second, a small share of what slurmctld serves; a job that
    // recovers in seconds still shows its new round within 30 s (job_comment.h).
    {Opt::kSlurmCommentInterval, "--slurm-comment-interval,--slurm_comment_interval", "slurm_comment_interval",
     "30", false,
     "Under Slurm: the rendezvous host writes the job's live state to the job's Comment "
     "(squeue -O jobid,comment; docs/admin.md), at most once per SECONDS (the newest state wins) "
     "and once at the end; 0: never.", {}},
    {Opt::kGrow, "--grow", "grow", "", false,
     "Under Slurm: while the world is below MAX, the rendezvous host keeps one-node helper jobs "
     "queued (sbatch --elastic-join=JOBID running srun with this command) and cancels them when the "
     "step ends; OPTIONS: on, or partition=P,qos=Q,account=A,time=T,nice=N,interval=SECONDS "
     "(srun --elastic-grow[=OPTIONS]).",
     {"elastic-grow", "OPTIONS",
      "[elastic] While the world is below MAX, keep one-node helper jobs queued that join this step "
      "(--elastic-join); cancelled when the step ends. OPTIONS: partition=P,qos=Q,account=A,time=T,"
      "nice=N,interval=SECONDS", 2}},
    {Opt::kNativeStacks, "--native-stacks,--native_stacks", "native_stacks", "auto", false,
     "A worker whose FileTimerClient timer expired (TORCHELASTIC_ENABLE_FILE_TIMER=1) first has "
     "its native frames dumped, before SIGABRT dumps its Python stacks: auto (py-spy if on PATH, "
     "else gdb, else none), py-spy, gdb or off (in LOG_DIR/attempt_N/LOCAL_RANK/native_stacks.log).", {}},
    {Opt::kNativeStacksTimeout, "--native-stacks-timeout,--native_stacks_timeout", "native_stacks_timeout",
     "15", false, "Seconds the --native-stacks tool may run before it is killed (the Python stacks "
     "still follow).", {}},
    {Opt::kConsoleDrainTimeout, "--console-drain-timeout,--console_drain_timeout", "console_drain_timeout",
     "10", false, "Seconds the agent waits at exit for a full console (stdout/stderr) to take the "
     "worker output it still holds; the rest is dropped with a warning.", {}},
    {Opt::kEvents, "--events", "events", "", false,
     "Append the job's event record to PATH: one JSON object per line (rounds, failures, nodes "
     "lost, the end; docs/user.md \"Event record\"), written by the rendezvous host (by its "
     "successor after a takeover). Every node opens PATH at start: an unwritable path is an "
     "error before anything runs. Under --log-dir the record is also LOG_DIR/events.jsonl.",
     {"elastic-events", "PATH",
      "[elastic] Append the job's event record (JSON lines: rounds, failures, the end) to PATH "
      "(elasticrun --events)", 1}},
    {Opt::kMasterAddr, "--master-addr,--master_addr", "master_addr", "127.0.0.1", false,
     "Static backend (torchrun's recipe with --node-rank): the address of node rank 0, where the "
     "rendezvous is hosted (IPv6 as [ADDR]); unused with --rdzv-endpoint or on one node.", {}},
    {Opt::kMasterPort, "--master-port,--master_port", "master_port", "29500", false,
     "Static backend: the rendezvous port on --master-addr. On one node a free port is used "
     "instead (as torchrun since 2.10); workers' MASTER_PORT is the agent's store, on a port of its own.", {}},
    {Opt::kStartMethod, "--start-method,--start_method", "start_method", "spawn", false,
     "spawn, fork or forkserver: accepted for torchrun compatibility, no effect (as torchrun's "
     "for a program: every worker is its own process; see --preload).", {}},
    {Opt::kLogLinePrefixTemplate, "--log-line-prefix-template,--log_line_prefix_template",
     "log_line_prefix_template", "", false,
     "Prefix of each worker's console lines instead of \"[rankN]: \", with ${role_name}, ${rank}, "
     "${local_rank} and ${hostname} replaced (torchrun's; also TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE).",
     {"elastic-log-line-prefix-template", "TEMPLATE",
      "[elastic] Prefix of each worker's console lines instead of [rankN]: with ${role_name}, "
      "${rank}, ${local_rank} and ${hostname} replaced (elasticrun --log-line-prefix-template)", 1}},
    // torchrun 2.x options without a meaning here: accepted, with one warning when set.
    {Opt::kEventLogHandler, "--event-log-handler,--event_log_handler", "event_log_handler", "null", false,
"torchrun's event logging handler: console prints each event of the record (--events) on "
     "the host's console; null and dynamic_rendezvous: nothing; others are ignored with a warning.", {}},
    {Opt::kDuplicateStdoutFilters, "--duplicate-stdout-filters,--duplicate_stdout_filters",
     "duplicate_stdout_filters", "", false,
     "Also write the workers' stdout lines that contain one of these comma-separated filters (,, "
     "is a comma) to LOG_DIR/attempt_N/filtered_stdout.log, with their prefix (torchrun's).", {}},
    {Opt::kDuplicateStderrFilters, "--duplicate-stderr-filters,--duplicate_stderr_filters",
     "duplicate_stderr_filters", "", false, "The same for stderr: LOG_DIR/attempt_N/filtered_stderr.log.", {}},
    {Opt::kLogsSpecs, "--logs-specs,--logs_specs", "logs_specs", "", false,
     "torchrun's torchrun.logs_specs entry point: default is what elasticrun does; others are "
     "ignored with a warning (--log-dir, --redirects, --tee and --log-line-prefix-template say "
     "where output goes).", {}},
    {Opt::kNumaBinding, "--numa-binding,--numa_binding", "numa_binding", "", false,
     "torchrun's binding near each worker's GPU: node (--bind=gpu), exclusive (--bind=gpu-exclusive), "
     "socket or core-complex (--bind=gpu, with a warning: binding is per NUMA node here); --bind wins.", {}},
    {Opt::kRdzvPort, "", "", "", false, "The rendezvous port of an srun --elastic step.",
     {"elastic-rdzv-port", "PORT",
      "[elastic] Rendezvous port (default: the step's reserved port with --resv-ports, else derived "
      "from the job id)", 1}},
    {Opt::kJoin, "", "", "", false, "Join the running elastic step of another job.",
     {"elastic-join", "JOBID",
      "[elastic] Join the running elastic step of job JOBID (yours): this step's nodes train in "
      "its run, as guests, up to its MAX (its rendezvous is found through Slurm)", 1}},
};

constexpr bool RowsInOrder() {
  size_t i = 0;
  for (const OptionRow& row : kOptionRows) {
    if (static_cast<size_t>(row.id) != i++) return false;
  }
  return i == static_cast<size_t>(Opt::kCount);
}
static_assert(RowsInOrder(), "kOptionRows has one row per Opt, in Opt's order");

constexpr size_t CountSrunRows() {
  size_t n = 0;
  for (const OptionRow& row : kOptionRows) n += row.srun.name != nullptr;
  return n;
}
static_assert(CountSrunRows() == kSrunOptionCount, "kSrunOptionCount is the number of srun rows");

constexpr std::array<const OptionRow*, kSrunOptionCount> kSrunRows = [] {
  std::array<const OptionRow*, kSrunOptionCount> out{};
  size_t k = 0;
  for (const OptionRow& row : kOptionRows) {
    if (row.srun.name != nullptr) out[k++] = &row;
  }
  return out;
}();

}  // namespace

std::span<const OptionRow> OptionTable() { return kOptionRows; }

const OptionRow& RowOf(Opt id) { return kOptionRows[static_cast<size_t>(id)]; }

std::span<const OptionRow* const, kSrunOptionCount> SrunRows() { return kSrunRows; }

std::string LongName(const OptionRow& row) {
  for (const std::string& name : Split(row.names, ',')) {
    if (name.starts_with("--")) return name.substr(2);
  }
  return "";
}

std::string PetName(const OptionRow& row) {
  if (row.PluginOnly()) return "";
  std::string name = "PET_";
  for (const char* c = row.dest; *c; ++c) name.push_back(static_cast<char>(std::toupper(*c)));
  return name;
}

bool CheckOptionValue(Opt id, std::string_view what, std::string_view text, std::string* err) {
  long long n = 0;
  switch (id) {
    case Opt::kNprocPerNode: {
      NprocSpec spec;
      return ParseNprocSpec(what, text, &spec, err);
    }
    case Opt::kMaxRestarts:
    case Opt::kRequeue:
      return ParseIntNamed(what, text, 0, 1000000, &n, err);
    case Opt::kNodeMultiple:
      // Against MIN:MAX once the node count is known (CheckNodeMultiple).
      return ParseIntNamed(what, text, 1, kMaxNodes, &n, err);
    case Opt::kRdzvId:
      return CheckProtocolName(what, text, err);
    case Opt::kRdzvEndpoint: {
      Endpoint endpoint;
      return ParseEndpointOrFreePort(what, text, &endpoint, err);
    }
    case Opt::kRdzvConf: {
      std::vector<std::pair<std::string, std::string>> pairs;
      return ParseKeyValues(what, text, &pairs, err);
    }
    case Opt::kBind: {
      BindMode mode;
      return ParseBindMode(what, text, &mode, err);
    }
    case Opt::kPreload: {
      std::vector<std::string> modules;
      return ParseModuleList(what, text, &modules, err);
    }
    case Opt::kGrow: {
      GrowOptions grow;
      return ParseGrowOptions(what, text, &grow, err);
    }
    default:
      return true;  // any text: a path, a command, a template
  }
}

}  // namespace elastic
