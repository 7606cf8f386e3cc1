// elasticrun's options: one table (name, PET_ variable, default, help), --help's
// text, and reading argv + env against the table (launch_options.h). What the
// values mean is launch_convert.cc's.
#include "launcher/launch_options.h"

#include <CLI/CLI.hpp>
#include <cctype>
#include <cstring>
#include <fmt/format.h>
#include <iterator>

#include "common/parse.h"
#include "elastic_version.h"
#include "launcher/completion.h"
#include "launcher/option_values.h"
#include "rendezvous/rendezvous_settings.h"

extern char** environ;

namespace elastic {
namespace {

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
    {Opt::kGrow, "--grow", "grow", "", false,
     "Under Slurm: while the world is below MAX, the rendezvous host keeps one-node helper jobs "
     "queued (sbatch --elastic-join=JOBID running srun with this command) and cancels them when the "
     "step ends; OPTIONS: on, or partition=P,qos=Q,account=A,time=T,nice=N,interval=SECONDS "
     "(srun --elastic-grow[=OPTIONS])."},
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
std::string HelpText(const OptionDef& def) {
  std::string text = def.help;
  if (def.def[0] != '\0') text += fmt::format(" [default: {}]", def.def);
  text += fmt::format(" [env: {}]", PetName(def.dest));
  return text;
}

constexpr const char* kFooter = R"(
Other commands: `elasticrun status JOBID[.STEP] [--json]` (or with the job's
--rdzv-endpoint and --rdzv-id) shows a running job's round, members, restarts
and failures (`elasticrun status --help`); `elasticrun timeline EVENTS.jsonl -o
job.svg` draws an event record.

The program: a first argument ending in .py (or -m/--run-path) runs as
`PYTHON -u program args...` (--python, default python3 from PATH; it must have
torch); anything else is executed as given (PATH lookup); --no-python forces that.

Precedence: command line > PET_<NAME> environment variable > default. Under
`srun --elastic` (ELASTIC_SPANK_ARGV0 set) options come from PET_* only.

Exit status (for batch scripts): 0 every worker succeeded; 1 the job failed:
restarts used up by a worker's failures (the summary names the worker's exit
code or signal) or an agent error, or fewer than MIN nodes left because the
others were stopped by a signal (scancel, time limit: never requeued); 2 do not requeue: a bad option or value
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
}  // namespace

ParseOutcome ReadOptions(int argc, const char* const* argv, const EnvMap& env, RawOptions* raw,
                         std::string* out, std::string* err) {
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

  auto spank = env.find("ELASTIC_SPANK_ARGV0");
  raw->spank_wrapped = spank != env.end() && !spank->second.empty();
  std::vector<std::string>& program = raw->program;
  try {
    if (raw->spank_wrapped) {
      const char* self[] = {argv[0]};
      app.parse(1, self);
      // Slurm < 23.11: our argv[0] replaced the task's, argv[1..] are its
      // arguments. Slurm >= 23.11 prepends us (ELASTIC_SPANK_ARGV_PREPENDED=1):
      // argv[1] is the task's own program again (as slurmstepd resolved it).
      auto prepended = env.find("ELASTIC_SPANK_ARGV_PREPENDED");
      int first = prepended != env.end() && prepended->second == "1" ? 2 : 1;
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
    OptionValue& v = raw->values[i];
    v.name = opts[i]->get_name();
    if (opts[i]->count() > 0) {
      v.text = def.flag ? "1" : texts[i];
      v.source = v.name;
      v.given = true;
    } else if (auto it = env.find(PetName(def.dest)); it != env.end()) {
      v.text = it->second;
      v.source = PetName(def.dest);
      v.given = true;
    } else {
      v.text = def.def;
    }
  }
  for (const auto& [opt, name] : kTorchrunEnv) {
    OptionValue& v = raw->values[static_cast<size_t>(opt)];
    if (auto it = env.find(name); !v.given && it != env.end()) {
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
    raw->print_binding = print_binding.empty() ? "table" : print_binding;
    if (!OneOf("--print-binding", raw->print_binding, {"table", "json"}, err)) {
      return ParseOutcome::kUsageError;
    }
  }
  if (!program.empty() && program.front() == "--") {
    program.erase(program.begin());
    DropDashDashAfterProgram(&program);
  } else if (!program.empty() && !raw->spank_wrapped && program.front().size() > 1 &&
             program.front()[0] == '-') {
    // CLI11's prefix mode passes unknown options through as the "program".
    *err = fmt::format("unknown option '{}' (see --help; put -- before a program whose name starts with -)",
                       program.front());
    return ParseOutcome::kUsageError;
  }
  if (!raw->spank_wrapped) DropDashDashAfterProgram(&program);
  return ParseOutcome::kRun;
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