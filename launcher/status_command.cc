#include "launcher/status_command.h"

#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "common/event_loop.h"
#include "common/log.h"
#include "common/net.h"
#include "launcher/event_writer.h"
#include "launcher/job_status.h"
#include "common/parse.h"
#include "launcher/make_rendezvous.h"
#include "launcher/status_target.h"
#include "launcher/worker_env.h"
#include "rendezvous/c10d_rendezvous.h"
#include "rendezvous/rendezvous_client.h"

namespace elastic {
namespace {

constexpr const char* kUsage =
    "usage: elasticrun status [--json] JOBID[.STEP] [--rdzv-id=ID] [--rdzv-port=PORT]\n"
    "       elasticrun status [--json] --rdzv-endpoint=HOST:PORT --rdzv-id=ID [--rdzv-conf=...]\n"
    "Asks the running job's rendezvous host, as an observer authenticated like its agents\n"
    "(the job's token or munge: the job's user only), for the current round, its members\n"
    "and their state, the restarts used and left, the last failures and the time spent in\n"
    "recoveries.\n"
    "  JOBID[.STEP]  a Slurm job (as squeue shows it): Slurm (scontrol) says whose it is,\n"
    "                whether it runs, and its step's nodes; the step's rendezvous is found\n"
    "                as the plugin made it (run id JOBID.STEP, the step's port) and its host\n"
    "                asked for on the step's first nodes, so a host that moved after a\n"
    "                failover is found too. STEP: the job's first step unless given.\n"
    "  --rdzv-id, --rdzv-port  the step's own --elastic-rdzv-id / --elastic-rdzv-port, if it\n"
    "                was given them (Slurm before 23.02 does not show a step's command line)\n"
    "  --rdzv-endpoint/--rdzv-id  without a job: the job's own rendezvous options (or its\n"
    "                PET_ variables)\n"
    "  --json  the view as one JSON object (docs/user.md, \"Job status\")\n"
    "Exit status: 0 printed; 1 no answer (no such job, not running, finished, another\n"
    "user's, no host answered); 2 bad usage.\n";

// In errors: the forms only.
constexpr const char* kShortUsage =
    "usage: elasticrun status [--json] JOBID[.STEP] | --rdzv-endpoint=HOST:PORT --rdzv-id=ID "
    "(elasticrun status --help)";

bool IsOptionWithValue(const std::string& word) {
  return word.starts_with("-") && word.find('=') == std::string::npos && word != "--json";
}

}  // namespace

int StatusMain(const std::vector<std::string>& argv, const EnvMap& env) {
  bool json_out = false;
  std::optional<JobStepArg> job;
  StatusOverrides given;
  std::string err;
  // The job's options through the one table; a placeholder stands for its program.
  std::vector<std::string> args = {argv.empty() ? "elasticrun" : argv[0]};
  for (size_t i = 2; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--json") {
      json_out = true;
    } else if (a == "-h" || a == "--help") {
      fmt::print("{}", kUsage);
      return 0;
    } else if (a == "--rdzv-port" || a == "--rdzv_port" || a.starts_with("--rdzv-port=") ||
               a.starts_with("--rdzv_port=")) {
      // status's own: the port a step was given with --elastic-rdzv-port.
      std::string value = a.find('=') != std::string::npos ? a.substr(a.find('=') + 1)
                          : i + 1 < argv.size()              ? argv[++i]
                                                             : "";
      long long port = 0;
      if (!ParseIntNamed("--rdzv-port", value, 1, 65535, &port, &err)) {
        Log(LogLevel::kError, "status: {}", err);
        return 2;
      }
      given.port = static_cast<int>(port);
    } else if (!a.starts_with("-") && !job && (i == 2 || !IsOptionWithValue(argv[i - 1]))) {
      // The job, parsed once here at the edge.
      JobStepArg parsed;
      if (!ParseJobStepArg(a, &parsed, &err)) {
        Log(LogLevel::kError, "status: {}\n{}", err, kShortUsage);
        return 2;
      }
      job = parsed;
    } else {
      if (a.starts_with("--rdzv-id") || a.starts_with("--rdzv_id")) given.rdzv_id = "";
      args.push_back(a);
    }
  }
  args.push_back("elasticrun-status");
  std::vector<const char*> c_args;
  for (const std::string& a : args) c_args.push_back(a.c_str());
  LaunchConfig config;
  std::string out;
  if (ParseLaunchConfig(static_cast<int>(c_args.size()), c_args.data(), env, &config, &out, &err) !=
      ParseOutcome::kRun) {
    Log(LogLevel::kError, "status: {}", err.empty() ? "bad usage" : err);
    return 2;
  }
  std::string moved_to;
  if (job) {
    if (config.spec.rdzv.endpoint) {
      Log(LogLevel::kError, "status: give a job or --rdzv-endpoint, not both\n{}", kShortUsage);
      return 2;
    }
    if (given.rdzv_id) given.rdzv_id = config.spec.rdzv.run_id;
    FoundRendezvous found;
    StatusRefusal refusal = StatusRefusal::kNone;
    if (!FindJobRendezvous(*job, given, EnvToStrings(env), static_cast<int>(config.agent.status_deadline_ms),
                           &found, &refusal, &err)) {
      Log(LogLevel::kError, "status: {}", err);
      return 1;
    }
    config.spec.rdzv.endpoint = Endpoint{found.address, found.target.port};
    config.spec.rdzv.run_id = found.target.rdzv_id;
    if (found.moved) moved_to = found.node;
  } else if (given.port) {
    Log(LogLevel::kError, "status: --rdzv-port goes with a job (JOBID[.STEP])\n{}", kShortUsage);
    return 2;
  }
  if (!config.spec.rdzv.endpoint) {
    Log(LogLevel::kError, "status: give a job (JOBID[.STEP]) or the job's --rdzv-endpoint HOST:PORT\n{}",
        kShortUsage);
    return 2;
  }
  if (!moved_to.empty())
    Log(LogLevel::kInfo, "status: the rendezvous host moved to {} (a failover): asking it", moved_to);
  RendezvousSettings settings;
  if (!BuildRendezvousSettings(config.spec.rdzv, &settings, &err)) {
    Log(LogLevel::kError, "status: {}", err);
    return 2;
  }
  settings.join_timeout_ms = std::min<int64_t>(settings.join_timeout_ms, config.agent.status_connect_timeout_ms);
  const Endpoint& endpoint = *config.spec.rdzv.endpoint;
  ClientConfig client_config;
  client_config.host = endpoint.host;
  client_config.port = endpoint.PortOr(kDefaultRendezvousPort);
  SocketAddress address;
  if (!ResolveAddress(client_config.host, client_config.port, &address, &err)) {
    Log(LogLevel::kError, "status: {}: {}", FormatEndpoint(endpoint), err);
    return 1;
  }
  client_config.address = address;
  client_config.settings = settings;
  client_config.run_id = config.spec.rdzv.run_id;
  client_config.node_name = "status@" + (config.spec.rdzv.hostname.empty() ? "localhost" : config.spec.rdzv.hostname);
  std::optional<nlohmann::json> view;
  std::string failed;
  EventLoop loop;
  client_config.on_status = [&](const nlohmann::json& v) { view = v; };
  RendezvousClient client(loop, client_config);
  RendezvousHandler::Callbacks callbacks;
  callbacks.on_fatal = [&](const JobEnd&, const std::string& message) { failed = message; };
  callbacks.on_done = [&] { failed = "the job ended"; };
  client.SetCallbacks(callbacks);
  client.Watch();
  MonoClock::time_point deadline = loop.Now() + Millis(config.agent.status_deadline_ms);
  while (!view && failed.empty() && loop.Now() < deadline) loop.RunOnce(Millis(100));
  if (!view) {
    Log(LogLevel::kError, "status: no status from run {} at {}: {}{}", config.spec.rdzv.run_id,
        FormatEndpoint(endpoint),
        failed.empty() ? fmt::format("no answer within {} s", config.agent.status_deadline_ms / 1000) : failed,
        " (has the job ended, or does its host run elsewhere after a failover?)");
    return 1;
  }
  JobStatus status;
  if (view->is_null()) {
    Log(LogLevel::kError, "status: the host of run {} keeps no status", config.spec.rdzv.run_id);
    return 1;
  }
  if (!DecodeJobStatus(*view, &status, &err)) {
    Log(LogLevel::kError, "status: the host's answer: {}", err);
    return 1;
  }
  if (json_out)
    fmt::print("{}\n", view->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  else
    fmt::print("{}", RenderJobStatus(status, WallClockMillis()));
  return 0;
}

}  // namespace elastic
