#include "launcher/launch_config.h"

#include "elastic_version.h"
#include "rendezvous/rendezvous_settings.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <functional>

#include "common/parse.h"
#include "launcher/option_values.h"

extern char** environ;

namespace elastic {
namespace {

// --preload: comma-separated dotted Python module names ("" = none).
bool ParseModuleList(const std::string& what, const std::string& text, std::vector<std::string>* out,
                     std::string* err) {
  out->clear();
  if (text.empty()) return true;
  for (const std::string& name : Split(text, ',')) {
    bool ok = !name.empty() && name.front() != '.' && name.back() != '.' &&
              name.find("..") == std::string::npos && !std::isdigit(static_cast<unsigned char>(name[0]));
    for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.');
    if (!ok) {
      *err = fmt::format("{}: '{}' is not a Python module name (a comma-separated list, e.g. torch,numpy)",
                         what, name);
      return false;
    }
    out->push_back(name);
  }
  return true;
}

// One row per option: its spellings, the PET_ variable, the default and the help.
struct OptionDef {
  const char* names;  // CLI11 names: "-r,--redirects"
  const char* dest;   // torchrun's dest; PET_<DEST upper-cased> is its variable
  const char* def;    // default as text ("" = none)
  bool flag;
  const char* help;
};

constexpr OptionDef kOptions[] = {
    {"--standalone", "standalone", "", true,
     "Single-node run with a local rendezvous (implies --nnodes=1)."},
    {"--nnodes", "nnodes", "1", false, "Number of nodes: N or MIN:MAX."},
    {"--nproc-per-node,--nproc_per_node", "nproc_per_node", "1", false,
     "Workers on this node: N, gpu (GPUs of this node; error if none), cpu (CPUs this "
     "process may use), auto (gpu count if any, else cpu count). GPUs come from "
     "CUDA_VISIBLE_DEVICES, else SLURM_STEP_GPUS/SLURM_JOB_GPUS, else hwloc."},
    {"--node-rank,--node_rank", "node_rank", "", false,
     "Preferred rank of this node (default: assigned by the rendezvous)."},
    {"--max-restarts,--max_restarts", "max_restarts", "0", false,
     "Restarts of the worker group after failures before the job fails."},
    {"--monitor-interval,--monitor_interval", "monitor_interval", "0.1", false,
     "Accepted for torchrun compatibility; elasticrun does not poll (seconds)."},
    {"--rdzv-backend,--rdzv_backend", "rdzv_backend", "c10d", false, "Rendezvous backend."},
    {"--rdzv-endpoint,--rdzv_endpoint", "rdzv_endpoint", "", false,
     "Rendezvous endpoint HOST[:PORT]."},
    {"--rdzv-id,--rdzv_id", "rdzv_id", "none", false,
     "Job id shared by all nodes (TORCHELASTIC_RUN_ID)."},
    {"--rdzv-conf,--rdzv_conf", "rdzv_conf", "", false,
     "Rendezvous settings key=value,... (join_timeout, last_call_timeout, ...)."},
    {"--local-addr,--local_addr", "local_addr", "", false,
     "Address of this node as seen by the others (default: its hostname)."},
    {"--role", "role", "default", false, "Role name of the workers (ROLE_NAME)."},
    {"-r,--redirects", "redirects", "0", false,
     "Send worker output to files only: 0 none, 1 stdout, 2 stderr, 3 both; one value "
     "or per local rank (0:1,1:3)."},
    {"-t,--tee", "tee", "0", false,
     "Copy worker output to files as well as the console; same values as --redirects."},
    {"--log-dir,--log_dir", "log_dir", "", false,
     "Directory for LOG_DIR/attempt_N/LOCAL_RANK/{stdout.log,stderr.log,error.json} "
     "(default: a fresh directory under $TMPDIR, removed at exit)."},
    {"--local-ranks-filter,--local_ranks_filter", "local_ranks_filter", "", false,
     "Only these local ranks' output on the console, e.g. 0,3 (default: all)."},
    {"--no-python,--no_python", "no_python", "", true,
     "Execute the program directly, even if it ends in .py."},
    {"-m,--module", "module", "", true, "Run the program as a Python module (python -m)."},
    {"--run-path,--run_path", "run_path", "", true, "Run the program as a Python script."},
    {"--signals-to-handle,--signals_to_handle", "signals_to_handle",
     "SIGTERM,SIGINT,SIGHUP,SIGQUIT", false,
     "Signals that stop the run: forwarded to the workers, then exit 128+signal. "
     "SIGUSR1/SIGUSR2 not listed here are forwarded and the run goes on."},
    {"--shutdown-timeout,--shutdown_timeout", "shutdown_timeout", "30", false,
     "Seconds between the stop signal and SIGKILL when stopping workers."},
    {"--virtual-local-rank,--virtual_local_rank", "virtual_local_rank", "", true,
     "Every worker sees LOCAL_RANK=0 and only its own GPU in CUDA_VISIBLE_DEVICES."},
    {"--python", "python", "python3", false,
     "Interpreter for .py programs and -m (looked up in PATH; it must have torch)."},
    {"--preload", "preload", "", false,
     "Python modules to import once per node, e.g. torch,numpy: every worker of every round "
     "is forked from that interpreter instead of starting Python (docs/elasticrun.md, "
     "\"Preloading\")."},
    {"--bind", "bind", "auto", false,
     "CPU/memory binding per worker: auto (gpu if GPUs, else numa), gpu, gpu-exclusive, "
     "numa, none."},
    {"--membind", "membind", "preferred", false, "Memory policy: preferred, strict, none."},
    {"--topology", "topology", "", false,
     "hwloc XML topology to plan with instead of this machine's (testing)."},
    {"--cpus-allowed,--cpus_allowed", "cpus_allowed", "", false,
     "Restrict binding to these CPUs, e.g. 0-15,32-47."},
    {"--gpu-vendor,--gpu_vendor", "gpu_vendor", "", false,
     "GPU vendor for hwloc discovery: nvidia or amd (default: nvidia if the node has NVIDIA GPUs, else amd)."},
    {"-v,--verbose", "verbose", "", true, "Log what the agent does."},
    {"--crash-loop-count,--crash_loop_count", "crash_loop_count", "3", false,
     "End the job (exit 2) when the workers fail within --crash-loop-window of their start "
     "this many rounds in a row; 0: never."},
    {"--crash-loop-window,--crash_loop_window", "crash_loop_window", "60", false,
     "Seconds from the workers' start within which a failure counts toward a crash loop."},
    {"--health-check,--health_check", "health_check", "", false,
     "Shell command run on this node before it joins each round; a non-zero exit or a "
     "timeout keeps the node out and it checks again every 10 s (output in "
     "LOG_DIR/health_check.log)."},
    {"--health-check-timeout,--health_check_timeout", "health_check_timeout", "60", false,
     "Seconds a --health-check may run before it is killed and counts as failed."},
};

std::string PetName(const char* dest) {
  std::string name = "PET_";
  for (const char* c = dest; *c; ++c) name.push_back(static_cast<char>(std::toupper(*c)));
  return name;
}

// One option's final text and where it came from, for error messages.
struct Value {
  std::string text;
  std::string source;  // "--nnodes" or "PET_NNODES" or "" for the default
  bool given = false;
  std::string What(const char* long_name) const { return source.empty() ? long_name : source; }
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
restarts used up (the summary names the worker's exit code or signal) or an
agent error; 2 do not requeue: a bad option or value (nothing was started) or a
crash loop (--crash-loop-count); 3 fewer than MIN nodes left or the rendezvous
host lost: requeueing may help; 128+N elasticrun got terminating signal N.)";

constexpr const char* kAuthHelp = R"(

Rendezvous authentication is mutual: agent and host each prove themselves over
fresh nonces of both, with the shared token when one is set (--rdzv-conf
token=... or ELASTIC_RDZV_TOKEN), else with a munge credential of the same user
where munged runs (every Slurm cluster with auth/munge); an agent with either
never joins a host that offers none. It keeps other users' and other jobs'
processes from joining or posing as the host; it does not encrypt the traffic.
The host logs which method is in use; a multi-node run with neither warns.
)";

class Parser {
 public:
  Parser(const EnvMap& env, LaunchConfig* config) : env_(env), c_(config) {}

  ParseOutcome Parse(int argc, const char* const* argv, std::string* out, std::string* err);

 private:
  bool Convert(std::string* err);
  bool ConvertRendezvous(std::string* err);
  bool ConvertBinding(std::string* err);
  bool ConvertResilience(std::string* err);
  const Value& V(const char* dest) { return values_[dest]; }
  std::string What(const char* dest, const char* long_name) { return V(dest).What(long_name); }

  const EnvMap& env_;
  LaunchConfig* c_;
  std::map<std::string, Value> values_;
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
      opts[i] = app.add_option(def.names, texts[i], HelpText(def));
    }
  }
  std::string print_binding;
  CLI::Option* print_opt =
      app.add_option("--print-binding,--print_binding", print_binding,
                     "Print the binding plan (table, or --print-binding=json) and exit.")
          ->expected(0, 1);

  auto spank = env_.find("ELASTIC_SPANK_ARGV0");
  c_->spank_wrapped = spank != env_.end() && !spank->second.empty();
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
    Value& v = values_[def.dest];
    std::string long_name = opts[i]->get_name();
    if (opts[i]->count() > 0) {
      v.text = def.flag ? "1" : texts[i];
      v.source = long_name;
      v.given = true;
    } else if (auto it = env_.find(PetName(def.dest)); it != env_.end()) {
      v.text = it->second;
      v.source = PetName(def.dest);
      v.given = true;
    } else {
      v.text = def.def;
    }
  }
  if (print_opt->count() > 0) {
    c_->print_binding = print_binding.empty() ? "table" : print_binding;
    if (!OneOf("--print-binding", c_->print_binding, {"table", "json"}, err)) {
      return ParseOutcome::kUsageError;
    }
  }
  if (!program.empty() && program.front() == "--") {
    program.erase(program.begin());
  } else if (!program.empty() && !c_->spank_wrapped && program.front().size() > 1 &&
             program.front()[0] == '-') {
    // CLI11's prefix mode passes unknown options through as the "program".
    *err = fmt::format("unknown option '{}' (see --help; put -- before a program whose name starts with -)",
                       program.front());
    return ParseOutcome::kUsageError;
  }
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
  auto flag = [&](const char* dest, const char* name, bool* out) {
    return ParseBool(What(dest, name), V(dest).text, out, err);
  };
  long long n = 0;
  if (!flag("no_python", "--no-python", &c_->no_python) || !flag("module", "-m", &c_->module) ||
      !flag("run_path", "--run-path", &c_->run_path) ||
      !flag("virtual_local_rank", "--virtual-local-rank", &c_->virtual_local_rank) ||
      !flag("verbose", "--verbose", &c_->verbose)) {
    return false;
  }
  if (c_->module && c_->no_python) {
    *err = "-m/--module: cannot be combined with --no-python";
    return false;
  }
  c_->nproc_spec = V("nproc_per_node").text;
  if (c_->nproc_spec != "gpu" && c_->nproc_spec != "cpu" && c_->nproc_spec != "auto" &&
      !ParseIntNamed(What("nproc_per_node", "--nproc-per-node"), c_->nproc_spec, 1, 4096, &n, err)) {
    *err += " (or gpu, cpu, auto)";
    return false;
  }
  if (!ParseSeconds(What("monitor_interval", "--monitor-interval"), V("monitor_interval").text,
                    &c_->monitor_interval_ms, err) ||
      !ParseSeconds(What("shutdown_timeout", "--shutdown-timeout"), V("shutdown_timeout").text,
                    &c_->shutdown_timeout_ms, err)) {
    return false;
  }
  c_->role = V("role").text;
  if (c_->role.empty()) {
    *err = What("role", "--role") + ": must not be empty";
    return false;
  }
  if (!ParseStdSpec(What("redirects", "--redirects"), V("redirects").text, &c_->redirects, err) ||
      !ParseStdSpec(What("tee", "--tee"), V("tee").text, &c_->tee, err) ||
      !ParseRankList(What("local_ranks_filter", "--local-ranks-filter"),
                     V("local_ranks_filter").text, &c_->local_ranks_filter, err) ||
      !ParseSignals(What("signals_to_handle", "--signals-to-handle"), V("signals_to_handle").text,
                    &c_->signals_to_handle, err)) {
    return false;
  }
  c_->log_dir = V("log_dir").text;
  c_->python = V("python").text;
  if (c_->python.empty()) {
    *err = What("python", "--python") + ": must not be empty";
    return false;
  }
  if (!ParseModuleList(What("preload", "--preload"), V("preload").text, &c_->preload, err)) return false;
  return ConvertRendezvous(err) && ConvertBinding(err) && ConvertResilience(err);
}

bool Parser::ConvertResilience(std::string* err) {
  long long n = 0;
  if (!ParseIntNamed(What("crash_loop_count", "--crash-loop-count"), V("crash_loop_count").text, 0, 1000000,
                     &n, err) ||
      !ParseSeconds(What("crash_loop_window", "--crash-loop-window"), V("crash_loop_window").text,
                    &c_->crash_loop_window_ms, err) ||
      !ParseSeconds(What("health_check_timeout", "--health-check-timeout"), V("health_check_timeout").text,
                    &c_->health_check_timeout_ms, err)) {
    return false;
  }
  c_->crash_loop_count = static_cast<int>(n);
  if (c_->health_check_timeout_ms <= 0) {
    *err = fmt::format("{}: '{}': must be more than 0 seconds",
                       What("health_check_timeout", "--health-check-timeout"), V("health_check_timeout").text);
    return false;
  }
  c_->health_check = V("health_check").text;
  return true;
}

bool Parser::ConvertRendezvous(std::string* err) {
  RendezvousOptions& r = c_->rdzv;
  if (!ParseBool(What("standalone", "--standalone"), V("standalone").text, &r.standalone, err) ||
      !ParseNnodes(What("nnodes", "--nnodes"), V("nnodes").text, &r, err)) {
    return false;
  }
  long long n = 0;
  if (V("node_rank").given) {
    if (!ParseIntNamed(What("node_rank", "--node-rank"), V("node_rank").text, 0, 100000, &n, err)) {
      return false;
    }
    r.node_rank = static_cast<int>(n);
  }
  if (!ParseIntNamed(What("max_restarts", "--max-restarts"), V("max_restarts").text, 0, 1000000, &n,
                     err)) {
    return false;
  }
  r.max_restarts = static_cast<int>(n);
  r.backend = V("rdzv_backend").text;
  if (r.backend.empty()) {
    *err = What("rdzv_backend", "--rdzv-backend") + ": must not be empty";
    return false;
  }
  r.endpoint = V("rdzv_endpoint").text;
  if (!ParseEndpoint(What("rdzv_endpoint", "--rdzv-endpoint"), r.endpoint, err)) return false;
  r.run_id = V("rdzv_id").text;
  if (r.run_id.empty()) {
    *err = What("rdzv_id", "--rdzv-id") + ": must not be empty";
    return false;
  }
  if (!ParseKeyValues(What("rdzv_conf", "--rdzv-conf"), V("rdzv_conf").text, &r.conf, err)) {
    return false;
  }
  r.local_addr = V("local_addr").text;
  if (r.standalone) {
    // torchrun: --standalone means one node with a private local rendezvous.
    r.min_nodes = r.max_nodes = 1;
    r.backend = "c10d";
    r.endpoint.clear();
  }
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) r.hostname = host;
  return true;
}

bool Parser::ConvertBinding(std::string* err) {
  c_->bind = V("bind").text;
  c_->membind = V("membind").text;
  c_->topology = V("topology").text;
  c_->cpus_allowed = V("cpus_allowed").text;
  c_->gpu_vendor = V("gpu_vendor").text;
  if (!OneOf(What("bind", "--bind"), c_->bind, {"auto", "gpu", "gpu-exclusive", "numa", "none"}, err) ||
      !OneOf(What("membind", "--membind"), c_->membind, {"preferred", "strict", "none"}, err) ||
      !ParseCpuList(What("cpus_allowed", "--cpus-allowed"), c_->cpus_allowed, err)) {
    return false;
  }
  if (!c_->gpu_vendor.empty() &&
      !OneOf(What("gpu_vendor", "--gpu-vendor"), c_->gpu_vendor, {"nvidia", "amd"}, err)) {
    return false;
  }
  if (!c_->topology.empty() && access(c_->topology.c_str(), R_OK) != 0) {
    *err = fmt::format("{}: '{}': {}", What("topology", "--topology"), c_->topology, strerror(errno));
    return false;
  }
  return true;
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
