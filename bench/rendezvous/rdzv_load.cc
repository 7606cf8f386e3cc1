// Scale load generator for the rendezvous: one host (a forked child process, as
// on a real head node) and N simulated agents in this process, each a real
// RendezvousClient with its own TCP connection and token authentication, all on
// one EventLoop. Measures the first round (connect, authenticate, join, round
// complete) and a restart round (one node reports a failure, everyone rejoins),
// with the bytes and messages each agent exchanged per round.
//
// Usage: rdzv_load --agents N [--connect-window W]
//
// --connect-window W (default 2048; 0: all at once): at most W agents between
// their connect and the host's welcome. From one process, N connects reach the
// host's listen queue (somaxconn, 4096 here) faster than any host can accept
// them, and every SYN past the queue is dropped and retransmitted by the kernel
// 1 s, then 3 s, later: that, not the rendezvous, made 16,384 agents take 3 s.
// On a cluster the SYNs come from N machines over srun's launch; the window
// keeps the simulated burst inside the queue, so the figure is the host's.
//
// The host listens on every address and agent i connects to 127.0.x.y (x < 4),
// one of 1,016 loopback addresses: from one source address to one
// destination, the kernel's search for a free ephemeral port in connect() grows with the
// connections already open to it (__inet_hash_connect: 45% of all CPU at
// 16,384 agents), a cost no real agent pays (each has its own address).
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <deque>
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
  // Heartbeats (and the host's "waiting" notes) come per interval, not per
  // round: 10 minutes keeps them out of the rounds measured even under the
  // sanitizers on a loaded machine (at 30 s they came into the process test's
  // restart round there: 4.3 messages per agent instead of 3). Likewise the
  // authentication deadline: agents past max_unauthenticated wait in the
  // host's backlog, and a retry would count twice.
  s.heartbeat_interval_ms = 600'000;
  s.heartbeat_timeout_ms = 1'200'000;
  s.join_timeout_ms = 1'200'000;
  s.auth_timeout_ms = 600'000;
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

// CPU seconds (user + system) used so far by this process and by the host: on
// a shared machine the wall time depends on the others' load, the CPU much less.
double CpuSeconds(pid_t host) {
  rusage self{};
  getrusage(RUSAGE_SELF, &self);
  double cpu = self.ru_utime.tv_sec + self.ru_stime.tv_sec +
               (self.ru_utime.tv_usec + self.ru_stime.tv_usec) / 1e6;
  std::FILE* f = std::fopen(fmt::format("/proc/{}/stat", host).c_str(), "r");
  if (!f) return cpu;
  char buf[1024] = {};
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  const char* p = std::strrchr(buf, ')');  // fields after the command name
  unsigned long utime = 0, stime = 0;
  if (n && p && std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime,
                            &stime) == 2)
    cpu += static_cast<double>(utime + stime) / sysconf(_SC_CLK_TCK);
  return cpu;
}

double Seconds(MonoClock::time_point a, MonoClock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// An agent's handshake is over once it has the challenge and the welcome.
bool Welcomed(const RendezvousClient& c) {
  const TrafficCounters* t = c.traffic();
  return t && t->messages_in >= 2;
}

int Run(int agents, size_t window) {
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);
  SocketAddress addr;
  std::string err;
  int bind_errno = 0;
  if (!ResolveAddress("0.0.0.0", 0, &addr, &err)) return 1;
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
    config.host = fmt::format("127.0.{}.{}", i / 256 % 4, 1 + i % 254);  // 1,016 addresses
    config.port = port;
    clients.push_back(std::make_unique<RendezvousClient>(loop, config));
    RendezvousHandler::Callbacks cb;
    cb.on_round = [&](const RoundInfo&) { ++rounds; };
    cb.on_restart_required = [&](const std::string&, RestartCause) { ++restarts; };
    cb.on_fatal = [&](const JobEnd&, const std::string& m) { fatal = m; };
    clients.back()->SetCallbacks(cb);
  }
  auto run_until = [&](auto cond) {
    while (!cond() && fatal.empty()) loop.RunOnce(Millis(1000));
  };
  double c0 = CpuSeconds(host);
  auto t0 = MonoClock::now();
  if (window == 0) window = clients.size();
  // Joined, in join order, not known to be welcomed (at most `window`). The
  // host welcomes them about in that order: popping from the front keeps the
  // bookkeeping O(1) per agent (a scan per loop pass would grow with N).
  std::deque<size_t> handshaking;
  size_t next = 0;
  while (rounds < clients.size() && fatal.empty()) {
    while (!handshaking.empty() && Welcomed(*clients[handshaking.front()])) handshaking.pop_front();
    for (; next < clients.size() && handshaking.size() < window; ++next) {
      clients[next]->Join(1);
      handshaking.push_back(next);
    }
    loop.RunOnce(Millis(1000));
  }
  auto t1 = MonoClock::now();
  double c1 = CpuSeconds(host);
  Totals first = Sum(clients);

  // Restart round: one agent's worker fails, every agent rejoins.
  rounds = 0;
  WorkerFailure failure;
  failure.global_rank = 0;
  double c2 = CpuSeconds(host);
  auto t2 = MonoClock::now();
  clients[0]->ReportWorkerFailure(failure);
  clients[0]->Join(1);
  run_until([&] { return restarts == clients.size() - 1; });
  for (size_t i = 1; i < clients.size(); ++i) clients[i]->Join(1);
  run_until([&] { return rounds == clients.size(); });
  auto t3 = MonoClock::now();
  double c3 = CpuSeconds(host);
  Totals second = Sum(clients);

  kill(host, SIGKILL);
  waitpid(host, nullptr, 0);
  if (!fatal.empty()) return std::fprintf(stderr, "rdzv_load: %s\n", fatal.c_str()), 1;
  double n = agents;
  std::printf("agents=%d connect_window=%zu first_round_s=%.3f restart_round_s=%.3f "
              "first_round_cpu_s=%.2f restart_round_cpu_s=%.2f "
              "first_round_bytes_per_agent=%.0f first_round_msgs_per_agent=%.1f "
              "restart_round_bytes_per_agent=%.0f restart_round_msgs_per_agent=%.1f\n",
              agents, window, Seconds(t0, t1), Seconds(t2, t3), c1 - c0, c3 - c2, first.bytes / n, first.messages / n,
              (second.bytes - first.bytes) / n, (second.messages - first.messages) / n);
  return 0;
}

}  // namespace
}  // namespace elastic

int main(int argc, char** argv) {
  int agents = 1024, window = 2048;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--agents") == 0 && i + 1 < argc) agents = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--connect-window") == 0 && i + 1 < argc) window = std::atoi(argv[++i]);
    else agents = 0;
  }
  if (agents < 1 || window < 0)
    return std::fprintf(stderr, "usage: rdzv_load --agents N [--connect-window W]\n"), 2;
  elastic::SetLogProgram("rdzv_load");
  return elastic::Run(agents, static_cast<size_t>(window));
}
