// Scale load generator for the rendezvous: one host (a forked child process, as
// on a real head node) and N simulated agents in this process, each a real
// RendezvousClient with its own TCP connection and token authentication, all on
// one EventLoop. Measures the first round (connect, authenticate, join, round
// complete) and a restart round (one node reports a failure, everyone rejoins),
// with the bytes and messages each agent exchanged per round.
//
// Usage: rdzv_load --agents N
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/event_loop.h"
#include "common/log.h"
#include "common/net.h"
#include "rendezvous/rendezvous_client.h"
#include "rendezvous/rendezvous_host.h"

namespace elastic {
namespace {

RendezvousSettings BenchSettings(int agents) {
  RendezvousSettings s;
  s.min_nodes = s.max_nodes = s.expected_nodes = agents;
  s.max_restarts = 10;
  s.token = "bench-token";
  s.heartbeat_interval_ms = 5'000;
  s.heartbeat_timeout_ms = 60'000;
  s.join_timeout_ms = 120'000;
  return s;
}

[[noreturn]] void RunHost(UniqueFd listener, int agents) {
  EventLoop loop;
  HostConfig config;
  config.settings = BenchSettings(agents);
  config.run_id = "bench";
  config.node_name = "host";
  config.store_addr = config.bind_addr = "127.0.0.1";
  config.auth = AuthMethod::kToken;
  std::string err;
  auto host = RendezvousHost::Create(loop, config, std::move(listener), &err);
  if (!host) {
    std::fprintf(stderr, "rdzv_load: host: %s\n", err.c_str());
    _exit(1);
  }
  loop.Run();
  _exit(0);
}

struct Totals {
  uint64_t bytes = 0, messages = 0;
};

Totals Sum(const std::vector<std::unique_ptr<RendezvousClient>>& clients) {
  Totals t;
  for (const auto& c : clients)
    if (const TrafficCounters* k = c->traffic()) {
      t.bytes += k->bytes_in + k->bytes_out;
      t.messages += k->messages_in + k->messages_out;
    }
  return t;
}

double Seconds(MonoClock::time_point a, MonoClock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

int Run(int agents) {
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);
  SocketAddress addr;
  std::string err;
  int bind_errno = 0;
  if (!ResolveAddress("127.0.0.1", 0, &addr, &err)) return 1;
  UniqueFd listener = ListenOn(addr, &bind_errno, &err);
  if (!listener) return std::fprintf(stderr, "rdzv_load: %s\n", err.c_str()), 1;
  int port = LocalPort(listener.get());
  pid_t host = fork();
  if (host == 0) RunHost(std::move(listener), agents);
  listener.Reset();

  EventLoop loop;
  std::vector<std::unique_ptr<RendezvousClient>> clients;
  size_t rounds = 0, restarts = 0;
  std::string fatal;
  for (int i = 0; i < agents; ++i) {
    ClientConfig config;
    config.settings = BenchSettings(agents);
    config.run_id = "bench";
    config.node_name = fmt::format("sim{}", i);
    config.host = "127.0.0.1";
    config.port = port;
    clients.push_back(std::make_unique<RendezvousClient>(loop, config));
    RendezvousHandler::Callbacks cb;
    cb.on_round = [&](const RoundInfo&) { ++rounds; };
    cb.on_restart_required = [&](const std::string&) { ++restarts; };
    cb.on_fatal = [&](const std::string& m) { fatal = m; };
    clients.back()->SetCallbacks(cb);
  }
  auto run_until = [&](auto cond) {
    while (!cond() && fatal.empty()) loop.RunOnce(Millis(1000));
  };
  auto t0 = MonoClock::now();
  for (auto& c : clients) c->Join(1);
  run_until([&] { return rounds == clients.size(); });
  auto t1 = MonoClock::now();
  Totals first = Sum(clients);

  // Restart round: one agent's worker fails, every agent rejoins.
  rounds = 0;
  WorkerFailure failure;
  failure.global_rank = 0;
  auto t2 = MonoClock::now();
  clients[0]->ReportWorkerFailure(failure);
  clients[0]->Join(1);
  run_until([&] { return restarts == clients.size() - 1; });
  for (size_t i = 1; i < clients.size(); ++i) clients[i]->Join(1);
  run_until([&] { return rounds == clients.size(); });
  auto t3 = MonoClock::now();
  Totals second = Sum(clients);

  kill(host, SIGKILL);
  waitpid(host, nullptr, 0);
  if (!fatal.empty()) return std::fprintf(stderr, "rdzv_load: %s\n", fatal.c_str()), 1;
  double n = agents;
  std::printf("agents=%d first_round_s=%.3f restart_round_s=%.3f "
              "first_round_bytes_per_agent=%.0f first_round_msgs_per_agent=%.1f "
              "restart_round_bytes_per_agent=%.0f restart_round_msgs_per_agent=%.1f\n",
              agents, Seconds(t0, t1), Seconds(t2, t3), first.bytes / n, first.messages / n,
              (second.bytes - first.bytes) / n, (second.messages - first.messages) / n);
  return 0;
}

}  // namespace
}  // namespace elastic

int main(int argc, char** argv) {
  int agents = 1024;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--agents") == 0 && i + 1 < argc) agents = std::atoi(argv[++i]);
  if (agents < 1) return std::fprintf(stderr, "usage: rdzv_load --agents N\n"), 2;
  elastic::SetLogProgram("rdzv_load");
  return elastic::Run(agents);
}
