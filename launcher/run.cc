#include "launcher/run.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <memory>
#include <optional>

#include "common/endpoint.h"
#include "common/log.h"
#include "launcher/agent.h"
#include "launcher/event_writer.h"
#include "launcher/interpreter_check.h"
#include "launcher/network_reach.h"
#include "launcher/zygote.h"
#include "launcher/make_rendezvous.h"
#include "launcher/srun_names.h"
#include "launcher/status_command.h"
#include "launcher/timeline.h"
#include "launcher/task_group.h"
#include "launcher/worker_command.h"

#include "hwloc_binding/binding.h"

namespace elastic {
namespace {

constexpr int kUsageExit = 2;

std::string Get(const EnvMap& env, const char* key) {
  auto it = env.find(key);
  return it == env.end() ? std::string() : it->second;
}

// The log directory: under --log-dir, a directory of this run's own
// (RUNID_XXXXXX, as torchrun's mkdtemp(prefix=run_id + "_")), so two runs that
// share a --log-dir never write into each other's attempt_N/; else a fresh one
// under $TMPDIR removed at exit.
class LogDir {
 public:
  bool Make(const LaunchConfig& config, const EnvMap& env, std::string* err) {
    if (!config.agent.log_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(config.agent.log_dir, ec);
      if (ec) {
        *err = fmt::format("--log-dir: '{}': {}", config.agent.log_dir, ec.message());
        return false;
      }
      std::string run = config.spec.rdzv.run_id;
      std::replace(run.begin(), run.end(), '/', '_');  // a name in the directory, never a path
      std::string templ = fmt::format("{}/{}_XXXXXX", config.agent.log_dir, run);
      if (mkdtemp(templ.data()) == nullptr) {
        *err = fmt::format("--log-dir: cannot create '{}': {}", templ, strerror(errno));
        return false;
      }
      path_ = templ;
      Log(LogLevel::kInfo, "logs of this run in {}", path_);
      return true;
    }
    std::string tmp = Get(env, "TMPDIR");
    std::string templ = (tmp.empty() ? std::string("/tmp") : tmp) + "/elasticrun-XXXXXX";
    if (mkdtemp(templ.data()) == nullptr) {
      *err = fmt::format("cannot create a log directory '{}': {}", templ, strerror(errno));
      return false;
    }
    path_ = templ;
    remove_ = true;
    return true;
  }
  ~LogDir() {
    std::error_code ec;
    if (remove_) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool remove_ = false;
};

BindingRequest MakeBindingRequest(const LaunchConfig& config, const EnvMap& env) {
  BindingRequest r;
  r.mode = config.spec.bind;
  r.membind = config.spec.membind;
  r.topology_file = config.spec.topology.empty() ? Get(env, "HWLOC_XMLFILE") : config.spec.topology;
  r.cpus_allowed = config.spec.cpus_allowed;
  r.gpu_vendor = config.spec.gpu_vendor;
  r.cuda_visible_devices = config.spec.gpus.cuda_visible_devices;  // parsed once (launch_convert.cc)
  r.slurm_step_gpus = config.spec.gpus.step_gpus;
  r.nproc = config.spec.nproc;
  return r;
}

// Fills workers->cpus/cores/bind from the binding plan. A plan that cannot be made is an
// error: nothing starts. With --print-binding the plan is the answer.
bool PlanWorkers(const LaunchConfig& config, const EnvMap& env, WorkerPlan* workers, int* exit_code) {
  auto plan = std::make_shared<BindingPlan>();
  std::string err;
  bool planned = PlanBinding(MakeBindingRequest(config, env), plan.get(), &err);
  if (!config.agent.print_binding.empty()) {
    if (!planned) {
      Log(LogLevel::kError, "binding: {}", err);
      *exit_code = 1;
      return false;
    }
    std::string text = config.agent.print_binding == "json" ? PlanToJson(*plan) : PlanToTable(*plan);
    fmt::print("{}{}", text, text.empty() || text.back() == '\n' ? "" : "\n");
    *exit_code = 0;
    return false;
  }
  if (!planned) {
    // A binding the user cannot get is an error before anything starts (a missing
    // topology file, more workers than GPUs with --bind=gpu), not a silent downgrade.
    Log(LogLevel::kError, "binding: {} (use --bind=none to run unbound)", err);
    *exit_code = kUsageExit;
    return false;
  }
  // Every node prints its plan at -v. Otherwise a note (e.g. no GPU seen) is one
  // line from node rank 0 only (or where the rank is not known yet), as the
  // agent's job-level events: not the whole table on every run.
  if (LogVerbose()) {
    Log(LogLevel::kInfo, "binding plan:\n{}", PlanToTable(*plan));
  } else if (!plan->note.empty() && config.spec.rdzv.node_rank <= 0) {
    Log(LogLevel::kInfo, "binding: note: {} (the whole plan: {})", plan->note,
        config.agent.spank_wrapped ? "export PET_VERBOSE=1" : "-v");
  }
  for (size_t i = 0; i < plan->workers.size(); ++i) {
    workers->cpus.push_back(plan->workers[i].cpus);
    workers->cores.push_back(OmpThreads(*plan, i));
  }
  if (plan->mode != BindMode::kNone && plan->this_system) {
    auto kernel = std::make_shared<std::vector<KernelBinding>>(plan->workers.size());
    for (size_t i = 0; i < plan->workers.size(); ++i) {
      if (!PrepareKernelBinding(*plan, plan->workers[i], &(*kernel)[i], &err)) {
        Log(LogLevel::kError, "binding local rank {}: {}", i, err);
        *exit_code = kUsageExit;
        return false;
      }
    }
    workers->kernel_binding = kernel;
    workers->bind = [kernel](int local_rank, const char** call) {
      if (local_rank >= static_cast<int>(kernel->size())) return 0;
      return ApplyKernelBinding((*kernel)[local_rank], call);
    };
  }
  return true;
}

// The event record's writer (event_writer.h): --events PATH and, under --log-dir,
// LOG_DIR/events.jsonl; with neither it writes nothing but still keeps what
// `elasticrun status` shows (job_status.h).
// Opened here, before anything runs: a path that cannot be written is an error now.
std::unique_ptr<EventWriter> MakeEventWriter(EventLoop& loop, const LaunchConfig& config,
                                             const std::string& log_dir, std::string* err) {
  std::vector<EventWriter::File> files;
  if (!config.agent.events_path.empty()) {
    EventWriter::File f;
    if (!EventWriter::OpenFile(config.agent.events_path, "--events", &f, err)) return nullptr;
    files.push_back(std::move(f));
  }
  if (!config.agent.log_dir.empty()) {
    EventWriter::File f;
    if (!EventWriter::OpenFile(log_dir + "/events.jsonl", "--log-dir", &f, err)) return nullptr;
    files.push_back(std::move(f));
  }
  return std::make_unique<EventWriter>(loop, std::move(files), config.agent.events_to_console, WallClockMillis);
}

// One task per GPU (task_group.h): worker K gets task K's CPU affinity, as Slurm
// bound that task (--cpu-bind), instead of a plan of our own.
bool BindAsTasks(const std::vector<TaskRecord>& tasks, WorkerPlan* workers, int* exit_code) {
  BindingPlan plan;
  auto kernel = std::make_shared<std::vector<KernelBinding>>(tasks.size());
  workers->cpus.assign(tasks.size(), "");
  workers->cores.assign(tasks.size(), 0);
  for (size_t i = 0; i < tasks.size(); ++i) {
    WorkerBinding worker;
    worker.cpus = tasks[i].cpus;
    std::string err;
    if (!PrepareKernelBinding(plan, worker, &(*kernel)[i], &err)) {
      Log(LogLevel::kError, "binding local rank {} as its Slurm task: {}", i, err);
      *exit_code = kUsageExit;
      return false;
    }
    workers->cpus[i] = tasks[i].cpus;
    for (unsigned long word : (*kernel)[i].cpu_mask) workers->cores[i] += __builtin_popcountl(word);
  }
  workers->kernel_binding = kernel;
  workers->bind = [kernel](int local_rank, const char** call) {
    if (local_rank >= static_cast<int>(kernel->size())) return 0;
    return ApplyKernelBinding((*kernel)[local_rank], call);
  };
  workers->tasks = tasks;
  return true;
}

}  // namespace

int RunElasticrun(LaunchConfig config, const EnvMap& env, const std::vector<TaskRecord>& tasks, int host_runner_fd) {
  UniqueFd host_runner_socket(host_runner_fd);
  std::string err;
  if (!ResolveNproc(&config, &err)) {
    Log(LogLevel::kError, "{}", err);
    return kUsageExit;
  }
  WorkerPlan workers;
  int exit_code = 0;
  if (!tasks.empty()) {
    if (config.spec.nproc != static_cast<int>(tasks.size())) {
      Log(LogLevel::kError, "{} workers for {} tasks on this node: one task per GPU starts one worker "
          "per task (drop --elastic-nproc-per-node)", config.spec.nproc, tasks.size());
      return kUsageExit;
    }
    if (!BindAsTasks(tasks, &workers, &exit_code)) return exit_code;
  } else if (!PlanWorkers(config, env, &workers, &exit_code)) {
    return exit_code;
  }
  if (!BuildWorkerCommand(config, env, &workers.path, &workers.argv, &err)) {
    Log(LogLevel::kError, "{}", err);
    return kUsageExit;
  }
  // A .py script run by an interpreter without torch: exit 2 here rather than
  // every worker failing and the restarts burnt (interpreter_check.h). The
  // interpreter is --python's, or the program itself (`python3 train.py`).
  PythonCommand python_command;
  if (ParsePythonCommand(workers.argv, config.spec.python, &python_command) && !python_command.module &&
      !CheckInterpreterHasTorch(python_command.target, workers.path, workers.argv[0] != config.spec.program,
                                config.agent.interpreter_check_timeout_ms, &err)) {
    Log(LogLevel::kError, "{}", err);
    return kUsageExit;
  }
  // A container with a network of its own: no other node can reach this one
  // (network_reach.h); said at once instead of after join_timeout.
  if (std::string why = CheckNetworkReach(config.spec.rdzv); !why.empty()) {
    Log(LogLevel::kError, "{}", why);
    return kUsageExit;
  }
  if (config.spec.nproc > 1 && !env.count("OMP_NUM_THREADS") && workers.cores.empty()) {
    Log(LogLevel::kDebug, "OMP_NUM_THREADS set to 1 for each worker (set it to override)");
  }
  LogDir log_dir;
  if (!log_dir.Make(config, env, &err)) {
    Log(LogLevel::kError, "{}", err);
    return 1;
  }
  workers.log_dir = log_dir.path();
  EventLoop loop;
  std::unique_ptr<EventWriter> events = MakeEventWriter(loop, config, log_dir.path(), &err);
  if (!err.empty()) {
    Log(LogLevel::kError, "{}", err);
    return kUsageExit;
  }
  std::unique_ptr<RendezvousHandler> rendezvous = MakeRendezvous(config.spec.rdzv, loop, &err, events.get());
  if (!rendezvous) {
    Log(LogLevel::kError, "{}", err);
    return kUsageExit;
  }
  // An agent in a container image: scontrol and the health check run on the host.
  std::unique_ptr<HostRunnerClient> host;
  if (host_runner_socket) {
    host = std::make_unique<HostRunnerClient>(loop, std::move(host_runner_socket));
    if (!host->Start(&err)) {
      Log(LogLevel::kWarning, "the host runner: {}: scontrol and health checks run here", err);
      host.reset();
    } else {
      Log(LogLevel::kDebug, "scontrol and health checks run on the host (the plugin's host runner)");
    }
  }
  int code = 0;
  {
    ElasticAgent agent(loop, config, env, std::move(workers));
    agent.SetHostRunner(host.get());
    code = agent.Run(std::move(rendezvous), events.get());
  }
  if (events) events->Flush();  // the end's line, when the loop stopped before its turn
  return code;
}

void MergePmixInfo(const PmixInfo& info, RendezvousOptions* rdzv) {
  std::optional<int> port = rdzv->endpoint ? rdzv->endpoint->port : std::nullopt;
  rdzv->endpoint = Endpoint{info.host_address, port};
  if (info.node_rank >= 0) rdzv->node_rank = info.node_rank;
  if (info.nnodes >= rdzv->min_nodes && info.nnodes <= rdzv->max_nodes) rdzv->expected_nodes = info.nnodes;
}

namespace {

// Under `srun --mpi=pmix --elastic` without --elastic-rdzv-endpoint the plugin
// names the step's first node only as a placeholder and sets
// ELASTIC_SPANK_PMIX_ENDPOINT=1: the host's address comes from PMIx, a
// collective of every node, done before any worker runs. Without PMIx built in
// the placeholder stays.
bool BootstrapFromPmix(const EnvMap& env, RendezvousOptions* rdzv) {
#ifdef ELASTIC_HAVE_PMIX
  if (Get(env, "ELASTIC_SPANK_PMIX_ENDPOINT") != "1") return true;
  PmixInfo info;
  std::string err;
  if (!PmixBootstrap(&info, &err)) {
    Log(LogLevel::kError,
        "PMIx bootstrap: the rendezvous endpoint: {} (give --elastic-rdzv-endpoint=ADDRESS to skip PMIx)", err);
    return false;
  }
  MergePmixInfo(info, rdzv);
  Log(LogLevel::kDebug, "PMIx: node {} of {}, rendezvous host {}", info.node_rank, info.nnodes,
      FormatEndpoint(*rdzv->endpoint));
#else
  (void)env;
  (void)rdzv;
#endif
  return true;
}

// Tasks 1..N-1 of a node (task_group.h) are PMIx processes too: the fence of
// task 0's bootstrap waits for them (srun --mpi=pmix --ntasks-per-node=N).
void FollowerFence(const EnvMap& env, int local_id) {
#ifdef ELASTIC_HAVE_PMIX
  if (Get(env, "ELASTIC_SPANK_PMIX_ENDPOINT") != "1") return;
  std::string err;
  // Task 0 reports the bootstrap's failure for the node; this line says which task.
  if (!PmixFollowerFence(&err)) Log(LogLevel::kDebug, "task {} of this node: PMIx: {}", local_id, err);
#else
  (void)env;
  (void)local_id;
#endif
}

}  // namespace

int ElasticrunMain(int argc, const char* const* argv, const HandedToken& handed, int host_runner_fd) {
  UniqueFd host_runner(host_runner_fd);
  SetLogProgram("elasticrun");
  EnvMap env = CurrentEnv();
  // `elasticrun timeline ...` draws an event record, `elasticrun status ...` asks a
  // running job's host (status_command.h); under srun --elastic argv is
  // the user's (ELASTIC_SPANK_ARGV0), never a subcommand.
  if (argc >= 2 && std::string_view(argv[1]) == "timeline" && !env.count("ELASTIC_SPANK_ARGV0"))
    return TimelineMain(std::vector<std::string>(argv + 2, argv + argc));
  if (argc >= 2 && std::string_view(argv[1]) == "status" && !env.count("ELASTIC_SPANK_ARGV0"))
    return StatusMain(std::vector<std::string>(argv, argv + argc), env);
  // Wrapped by the plugin (launch_config.h, spank_wrapped): from the first
  // message on, name the srun options the user typed, not our flags.
  if (auto it = env.find("ELASTIC_SPANK_ARGV0"); it != env.end() && !it->second.empty()) {
    SetLogRewrite(SrunOptionNames);
  }
  LaunchConfig config;
  std::string out, err;
  switch (ParseLaunchConfig(argc, argv, env, &config, &out, &err)) {
    case ParseOutcome::kExitOk:
      fmt::print("{}", out);
      return 0;
    case ParseOutcome::kUsageError:
      Log(LogLevel::kError, "{}", err);
      return kUsageExit;
    case ParseOutcome::kRun:
      break;
  }
  SetLogVerbose(config.agent.verbose);
  if (handed.handed) {
    // Without it this node could not join its step's rendezvous (the others hold it).
    if (!handed.error.empty()) {
      Log(LogLevel::kError, "the per-step token from the SPANK plugin: {}", handed.error);
      return kUsageExit;
    }
    config.spec.rdzv.token = handed.token;
    config.spec.rdzv.token_file.clear();
    Log(LogLevel::kDebug, "rendezvous token: the step's, from the SPANK plugin");
  }
  // Several Slurm tasks on this node (srun --ntasks-per-node=N): task 0 runs the
  // node's agent, the others wait for it (task_group.h).
  std::optional<TaskGroup> group;
  std::string group_dir;
  if (auto it = env.find("ELASTIC_SPANK_TASK_GROUP"); it != env.end()) {
    group = ParseTaskGroup(it->second, &err);
    if (!group) {
      Log(LogLevel::kError, "{}", err);
      return kUsageExit;
    }
    std::string state_dir;
    for (const auto& [key, value] : config.spec.rdzv.conf) {
      if (key == "state_dir") state_dir = value;
    }
    auto key = env.find("ELASTIC_SPANK_TASK_GROUP_KEY");
    group_dir = TaskGroupDir(state_dir, key == env.end() ? "" : key->second, &err);
    if (group_dir.empty()) {
      Log(LogLevel::kError, "one task per GPU: {}", err);
      return 1;
    }
    if (group->local_id != 0)
      return RunTaskFollower(group_dir, *group, env, config.agent.task_agent_start_timeout_ms,
                             [&] { FollowerFence(env, group->local_id); });
  }
  if (config.spec.rdzv.token_in_argv)
    Log(LogLevel::kWarning, "--rdzv-conf token=... is on the command line, which every local user "
        "can read (/proc/PID/cmdline, ps): give the token as token_file=PATH (mode 0600), "
        "ELASTIC_RDZV_TOKEN_FILE or ELASTIC_RDZV_TOKEN instead");
  for (const std::string& warning : config.warnings) Log(LogLevel::kWarning, "{}", warning);
  std::vector<TaskRecord> tasks;
  if (group) {
    if (!CollectTaskRecords(group_dir, *group, env, config.agent.task_records_timeout_ms, &tasks, &err)) {
      Log(LogLevel::kError, "one task per GPU: {}", err);
      FinishTaskGroup(group_dir, *group, 1);
      return 1;
    }
  }
  int code = BootstrapFromPmix(env, &config.spec.rdzv)
                 ? RunElasticrun(std::move(config), env, tasks, host_runner.Release())
                 : 1;
  if (group) FinishTaskGroup(group_dir, *group, code);
  return code;
}

}  // namespace elastic
