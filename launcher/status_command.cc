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
#include "launcher/make_rendezvous.h"
#include "rendezvous/c10d_rendezvous.h"
#include "rendezvous/rendezvous_client.h"

namespace elastic {
namespace {

constexpr const char* kUsage =
    "usage: elasticrun status [--json] --rdzv-endpoint=HOST:PORT --rdzv-id=ID [--rdzv-conf=...]\n"
    "Asks the running job's rendezvous host, as an observer authenticated like its agents\n"
    "(the job's token or munge: the job's user only), for the current round, its members\n"
    "and their state, the restarts used and left, the last failures and the time spent in\n"
    "recoveries. Give the job's own rendezvous options (or its PET_ variables).\n"
    "  --json  the view as one JSON object (docs/user.md, \"Job status\")\n";

}  // namespace

int StatusMain(const std::vector<std::string>& argv, const EnvMap& env) {
  bool json_out = false;
  // The job's options through the one table; a placeholder stands for its program.
  std::vector<std::string> args = {argv.empty() ? "elasticrun" : argv[0]};
  for (size_t i = 2; i < argv.size(); ++i) {
    if (argv[i] == "--json") {
      json_out = true;
    } else if (argv[i] == "-h" || argv[i] == "--help") {
      fmt::print("{}", kUsage);
      return 0;
    } else {
      args.push_back(argv[i]);
    }
  }
  args.push_back("elasticrun-status");
  std::vector<const char*> c_args;
  for (const std::string& a : args) c_args.push_back(a.c_str());
  LaunchConfig config;
  std::string out, err;
  if (ParseLaunchConfig(static_cast<int>(c_args.size()), c_args.data(), env, &config, &out, &err) !=
      ParseOutcome::kRun) {
    Log(LogLevel::kError, "status: {}", err.empty() ? "bad usage" : err);
    return 2;
  }
  if (!config.spec.rdzv.endpoint) {
    Log(LogLevel::kError, "status: --rdzv-endpoint HOST:PORT is required (the job's)\n{}", kUsage);
    return 2;
  }
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
