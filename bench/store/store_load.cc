// store_load: a load generator for any TCPStore server (1.13 wire dialect),
// built on our client library. Prints one JSON object per run.
//
//   store_load setget --port P --conns N --seconds S [--threads T]
//     N connections driven by T epoll threads (default 1), each connection in
//     a closed loop of set+get pairs on small values, as PyTorch's client does
//     them: SET, then get = WAIT + GET. One pair = 3 requests, 2 round trips.
//   store_load fanout --port P --waiters 1000 --rounds R
//     1,000 connections WAIT on one key; one SET wakes them all. Reports the
//     time from the SET until the last waiter has its STOP_WAITING.
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <fmt/format.h>
#include <thread>
#include <vector>

#include "bench/store/store_client.h"
#include "bench/store/store_codec.h"
#include "store/store_net.h"
#include "store/store_protocol.h"

namespace {

using namespace elastic;
using Clock = std::chrono::steady_clock;

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  size_t i = std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5));
  std::nth_element(v.begin(), v.begin() + i, v.end());
  return v[i];
}

// One connection's closed loop: SET+WAIT (sent together, as PyTorch's client
// does: SET has no reply), STOP_WAITING, then GET and its value.
struct PairConn {
  UniqueFd fd;
  std::string key;
  std::string in;
  std::string out;
  bool awaiting_value = false;
  Clock::time_point t0;
};

bool StartPair(PairConn& c, const std::string& value) {
  c.out.clear();
  store_codec::EncodeSet(&c.out, c.key, value);
  store_codec::EncodeWait(&c.out, {c.key});
  c.awaiting_value = false;
  c.t0 = Clock::now();
  return send(c.fd.get(), c.out.data(), c.out.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(c.out.size());
}

// Reads what arrived and advances the loop; false on a broken connection.
bool OnReadable(PairConn& c, const std::string& value, std::vector<double>* lat) {
  char buf[4096];
  for (;;) {
    ssize_t n = recv(c.fd.get(), buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      c.in.append(buf, n);
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return false;
    break;
  }
  for (;;) {
    if (!c.awaiting_value) {
      uint8_t stop = 0;
      size_t used = store_codec::DecodeU8(c.in, &stop);
      if (!used) return true;
      c.in.erase(0, used);
      c.out.clear();
      store_codec::EncodeGet(&c.out, c.key);
      if (send(c.fd.get(), c.out.data(), c.out.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(c.out.size())) {
        return false;
      }
      c.awaiting_value = true;
    } else {
      std::string got;
      size_t used = store_codec::DecodeString(c.in, &got);
      if (!used) return true;
      c.in.erase(0, used);
      lat->push_back(std::chrono::duration<double, std::micro>(Clock::now() - c.t0).count());
      if (!StartPair(c, value)) return false;
    }
  }
}

// Drives `conns` from one thread with epoll until `stop`.
void Drive(std::vector<PairConn>& conns, const std::string& value, const std::atomic<bool>& go,
           const std::atomic<bool>& stop, std::vector<double>* lat, std::atomic<int>* failures) {
  UniqueFd ep(epoll_create1(EPOLL_CLOEXEC));
  for (size_t i = 0; i < conns.size(); ++i) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = i;
    epoll_ctl(ep.get(), EPOLL_CTL_ADD, conns[i].fd.get(), &ev);
  }
  while (!go) std::this_thread::yield();
  for (auto& c : conns) StartPair(c, value);
  epoll_event evs[256];
  while (!stop) {
    int n = epoll_wait(ep.get(), evs, 256, 100);
    for (int i = 0; i < n; ++i) {
      PairConn& c = conns[evs[i].data.u64];
      if (!OnReadable(c, value, lat)) {
        ++*failures;
        epoll_ctl(ep.get(), EPOLL_CTL_DEL, c.fd.get(), nullptr);
      }
    }
  }
}

int SetGet(const std::string& host, int port, int conns, int threads, double seconds, size_t value_size) {
  threads = std::max(1, std::min(threads, conns));
  std::vector<std::vector<PairConn>> groups(threads);
  std::string err;
  for (int i = 0; i < conns; ++i) {
    PairConn c;
    if (!ConnectTcp(host, port, 30000, &c.fd, &err)) {
      fmt::print(stderr, "store_load: {}\n", err);
      return 1;
    }
    c.key = fmt::format("/bench/{}", i);
    groups[i % threads].push_back(std::move(c));
  }
  std::string value(value_size, 'v');
  std::atomic<bool> go{false}, stop{false};
  std::atomic<int> failures{0};
  std::vector<std::vector<double>> lat(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    lat[t].reserve(1 << 22);
    workers.emplace_back([&, t] { Drive(groups[t], value, go, stop, &lat[t], &failures); });
  }
  auto start = Clock::now();
  go = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  for (auto& w : workers) w.join();
  std::vector<double> all;
  for (auto& l : lat) all.insert(all.end(), l.begin(), l.end());
  double pairs = all.size() / elapsed;
  double p50 = Percentile(all, 0.5), p99 = Percentile(all, 0.99);
  fmt::print("{{\"mode\":\"setget\",\"conns\":{},\"pairs_per_s\":{:.0f},\"ops_per_s\":{:.0f},"
             "\"p50_us\":{:.1f},\"p99_us\":{:.1f},\"failures\":{}}}\n",
             conns, pairs, 2 * pairs, p50, p99, failures.load());
  return failures ? 1 : 0;
}

bool SendAll(int fd, const std::string& s) {
  return send(fd, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size());
}

int FanOut(const std::string& host, int port, int waiters, int rounds) {
  std::vector<UniqueFd> fds(waiters);
  std::string err;
  for (auto& fd : fds) {
    if (!ConnectTcp(host, port, 30000, &fd, &err)) {
      fmt::print(stderr, "store_load: {}\n", err);
      return 1;
    }
  }
  auto setter = StoreClient::Connect(host, port, std::chrono::seconds(30), &err);
  if (!setter) return 1;
  UniqueFd ep(epoll_create1(EPOLL_CLOEXEC));
  for (int i = 0; i < waiters; ++i) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = i;
    epoll_ctl(ep.get(), EPOLL_CTL_ADD, fds[i].get(), &ev);
  }
  std::vector<double> wake_all_ms, per_waiter_us;
  for (int r = -1; r < rounds; ++r) {  // round -1 warms up, not counted
    std::string key = fmt::format("/fan/{}", r);
    std::string wait = std::string(1, static_cast<char>(legacy_op::kWait));
    PutU64(&wait, 1);
    PutString(&wait, key);
    for (auto& fd : fds) SendAll(fd.get(), wait);
    // Give the server time to read every WAIT before the SET (a benchmark
    // pause, not a correctness wait: a WAIT read late would just return at once).
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    auto t0 = Clock::now();
    if (!setter->Set(key, "go", &err)) return 1;
    int woken = 0;
    epoll_event evs[256];
    while (woken < waiters) {
      int n = epoll_wait(ep.get(), evs, 256, 30000);
      if (n <= 0) {
        fmt::print(stderr, "store_load: fan-out stalled at {}/{}\n", woken, waiters);
        return 1;
      }
      auto now = Clock::now();
      for (int i = 0; i < n; ++i) {
        char b;
        if (recv(fds[evs[i].data.u32].get(), &b, 1, MSG_DONTWAIT) == 1) {
          ++woken;
          if (r >= 0) per_waiter_us.push_back(std::chrono::duration<double, std::micro>(now - t0).count());
        }
      }
    }
    if (r >= 0) wake_all_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  double max_ms = *std::max_element(wake_all_ms.begin(), wake_all_ms.end());
  fmt::print("{{\"mode\":\"fanout\",\"waiters\":{},\"rounds\":{},\"wake_all_ms_p50\":{:.2f},"
             "\"wake_all_ms_max\":{:.2f},\"waiter_p50_us\":{:.0f},\"waiter_p99_us\":{:.0f}}}\n",
             waiters, rounds, Percentile(wake_all_ms, 0.5), max_ms, Percentile(per_waiter_us, 0.5),
             Percentile(per_waiter_us, 0.99));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);

  CLI::App app{"Load generator for TCPStore servers"};
  app.require_subcommand(1);
  std::string host = "127.0.0.1";
  int port = 0, conns = 1, threads = 1, waiters = 1000, rounds = 10;
  double seconds = 5;
  size_t value_size = 16;
  auto* sg = app.add_subcommand("setget", "closed-loop set+get pairs");
  auto* fo = app.add_subcommand("fanout", "one SET wakes many WAITs");
  for (auto* sc : {sg, fo}) {
    sc->add_option("--host", host);
    sc->add_option("--port", port)->required();
  }
  sg->add_option("--conns", conns);
  sg->add_option("--threads", threads, "generator threads (1 leaves the other core to the server)");
  sg->add_option("--seconds", seconds);
  sg->add_option("--value-size", value_size);
  fo->add_option("--waiters", waiters);
  fo->add_option("--rounds", rounds);
  CLI11_PARSE(app, argc, argv);
  if (*sg) return SetGet(host, port, conns, threads, seconds, value_size);
  return FanOut(host, port, waiters, rounds);
}
