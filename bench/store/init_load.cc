// init_load: plays the store traffic of `init_process_group("nccl")` for N
// simulated ranks against any TCPStore server (ours, PyTorch's), from several
// client processes (one process may hold ~20,000 descriptors here), and prints
// one JSON object: the time from the start until the last rank is through.
//
// Per rank, as a PyTorch 2.x worker under an agent store (torch/distributed/
// rendezvous.py `_create_c10d_store`: TCPStore client with the world size;
// TCPStore.cpp; ProcessGroupNCCL.cpp broadcastUniqueNCCLID; distributed_c10d.py
// _store_based_barrier, which TORCH_DIST_INIT_BARRIER=1 turns on):
//   connect; VALIDATE (no reply); PING nonce -> nonce      (2.x dialect only)
//   ADD "init/" 1                                          (TCPStore waitForWorkers)
//   rank 0: SET /default_pg/0//cuda//0 = 128-byte NCCL unique id
//   others: WAIT [that key] -> STOP_WAITING; GET it -> the 128 bytes
//   ADD B 1; ADD B 0 -> count; count == N: SET B:last_worker "1"; WAIT [B:last_worker]
//     with B = /default_pg/store_based_barrier_key:0
// The legacy dialect (--dialect legacy) is the same sequence as a 1.13 client
// sends it: no VALIDATE and no PING, 1.13's opcodes.
// Every connection stays open until all ranks are through, as a worker keeps
// its store client for the whole job: no close is inside the timed window.
//
//   init_load --port P [--ranks 16384] [--procs 4] [--dialect v2|legacy]
//             [--window 2048] [--fanout]
// --fanout: every rank connects (VALIDATE, PING, ADD init/), then WAITs on one key; once all
// have sent their WAIT (and a pause for the server to read them), one SET
// wakes them all: the time from the SET until the last STOP_WAITING.
//
// Like rdzv_load: the server should listen on every address; rank r connects to
// 127.0.x.y (1,016 loopback addresses; from one address the kernel's ephemeral
// port search in connect() grows with the connections open), and at most
// --window ranks are between connect and their first reply (from one machine
// the SYNs would otherwise overflow the listen queue, somaxconn 4096 here, and
// wait for the kernel's 1 s retransmission). PyTorch's client spreads its
// connects by sleeping a random 1..N ms instead (TCPStore.cpp); that is left
// out, as it would be the same for every server.
//
// The requests are encoded with store/store_protocol.h's Put* helpers and the
// replies decoded with bench/store/store_codec.h's Decode* (the benchmark's client
// codec): the only two dependencies on the store library.
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <string>
#include <vector>

#include "common/net.h"
#include "bench/store/store_codec.h"
#include "store/store_protocol.h"

namespace {

using namespace elastic;

const char kInitKey[] = "init/";
const char kIdKey[] = "/default_pg/0//cuda//0";
const char kBarrierKey[] = "/default_pg/store_based_barrier_key:0";
const char kLastWorkerKey[] = "/default_pg/store_based_barrier_key:0:last_worker";
const char kFanoutKey[] = "/fanout";
constexpr size_t kNcclIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES

// Opcodes of one client generation (REFERENCE: docs/design.md, "TCPStore wire protocol").
struct Dialect {
  bool validate_and_ping;
  uint8_t set, get, add, wait;
};
constexpr Dialect kV2{true, v2_op::kSet, v2_op::kGet, v2_op::kAdd, v2_op::kWait};
constexpr Dialect kLegacy{false, legacy_op::kSet, legacy_op::kGet, legacy_op::kAdd, legacy_op::kWait};

int64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // one clock for every process of the run
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// What a rank waits for next.
enum class Step { kConnect, kPing, kInitAdd, kIdWait, kIdGet, kBarrierAdd, kBarrierCount,
                  kBarrierWait, kFanoutWait, kDone };

struct Rank {
  int rank = 0;
  UniqueFd fd;
  Step step = Step::kConnect;
  bool handshaking = false;  // connecting, or connected without a first reply
  bool waiting = false;      // fan-out: its WAIT is sent
  std::string in, out;
};

struct Run {
  Dialect d;
  int world = 0;
  bool fanout = false;
  std::string id_value = std::string(kNcclIdBytes, '\x5a');
  int failures = 0;
  std::string first_error;

  void Fail(Rank& r, const std::string& why) {
    if (failures++ == 0) first_error = fmt::format("rank {}: {}", r.rank, why);
    r.step = Step::kDone;
    r.fd.Reset();
  }
  void Op(std::string* out, uint8_t op, std::string_view key) {
    PutU8(out, op);
    PutString(out, key);
  }
  void Wait(std::string* out, std::string_view key) {
    PutU8(out, d.wait);
    PutU64(out, 1);
    PutString(out, key);
  }
  void Add(std::string* out, std::string_view key, int64_t delta) {
    Op(out, d.add, key);
    PutI64(out, delta);
  }

  // The requests once connected.
  void Start(Rank& r) {
    if (d.validate_and_ping) {
      PutU8(&r.out, v2_op::kValidate);
      PutU32(&r.out, kStoreValidateMagic);
      PutU8(&r.out, v2_op::kPing);
      PutU32(&r.out, static_cast<uint32_t>(r.rank));
      r.step = Step::kPing;
    } else {
      AfterPing(r);
    }
  }
  void AfterPing(Rank& r) {
    Add(&r.out, kInitKey, 1);
    r.step = Step::kInitAdd;
  }
  void Barrier(Rank& r) {
    Add(&r.out, kBarrierKey, 1);
    r.step = Step::kBarrierAdd;
  }

  // Consumes complete replies from r.in; queues the next requests in r.out.
  // Returns false when a reply is not complete yet.
  bool Advance(Rank& r) {
    std::string_view in = r.in;
    size_t used = 0;
    uint8_t u8 = 0;
    int64_t i64 = 0;
    std::string value;
    switch (r.step) {
      case Step::kPing: {
        if (in.size() < 4) return false;
        uint32_t nonce = 0;
        std::memcpy(&nonce, in.data(), 4);
        used = 4;
        if (nonce != static_cast<uint32_t>(r.rank)) return Fail(r, "PING echoed a wrong nonce"), false;
        AfterPing(r);
        break;
      }
      case Step::kInitAdd:
        if (!(used = store_codec::DecodeI64(in, &i64))) return false;
        if (fanout) {
          Wait(&r.out, kFanoutKey);
          r.step = Step::kFanoutWait;
        } else if (r.rank == 0) {
          Op(&r.out, d.set, kIdKey);
          PutString(&r.out, id_value);
          Barrier(r);
        } else {
          Wait(&r.out, kIdKey);
          r.step = Step::kIdWait;
        }
        break;
      case Step::kIdWait:
        if (!(used = store_codec::DecodeU8(in, &u8))) return false;
        if (u8 != kWaitStopWaiting) return Fail(r, fmt::format("WAIT replied {}", u8)), false;
        Op(&r.out, d.get, kIdKey);
        r.step = Step::kIdGet;
        break;
      case Step::kIdGet:
        if (!(used = store_codec::DecodeString(in, &value))) return false;
        if (value != id_value) return Fail(r, "GET of the unique id returned other bytes"), false;
        Barrier(r);
        break;
      case Step::kBarrierAdd:
        if (!(used = store_codec::DecodeI64(in, &i64))) return false;
        Add(&r.out, kBarrierKey, 0);
        r.step = Step::kBarrierCount;
        break;
      case Step::kBarrierCount:
        if (!(used = store_codec::DecodeI64(in, &i64))) return false;
        if (i64 == world) {
          Op(&r.out, d.set, kLastWorkerKey);
          PutString(&r.out, "1");
        }
        Wait(&r.out, kLastWorkerKey);
        r.step = Step::kBarrierWait;
        break;
      case Step::kBarrierWait:
      case Step::kFanoutWait:
        if (!(used = store_codec::DecodeU8(in, &u8))) return false;
        if (u8 != kWaitStopWaiting) return Fail(r, fmt::format("WAIT replied {}", u8)), false;
        r.step = Step::kDone;
        break;
      case Step::kConnect:
      case Step::kDone:
        return false;
    }
    r.in.erase(0, used);
    return true;
  }
};

bool Flush(Rank& r) {
  while (!r.out.empty()) {
    ssize_t n = send(r.fd.get(), r.out.data(), r.out.size(), MSG_NOSIGNAL);
    if (n < 0) return errno == EAGAIN || errno == EINTR;  // small requests: rare; epoll retries
    r.out.erase(0, static_cast<size_t>(n));
  }
  return true;
}

// One client process: ranks [first, first + count). Writes "done_ns failures
// error" to `report` and exits. In fan-out mode it reports once all its ranks
// have sent their WAIT ("ready"), then waits for `go_set` before timing.
struct Child {
  Run run;
  int port = 0;
  int first = 0, count = 0;
  size_t window = 0;

  std::string Address(int rank) const {
    return fmt::format("127.0.{}.{}", rank / 254 % 4, 1 + rank % 254);
  }

  int Main(int go_fd, int report_fd, int release_fd) {
    std::vector<Rank> ranks(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) ranks[i].rank = first + i;
    UniqueFd ep(epoll_create1(EPOLL_CLOEXEC));
    char byte;
    if (read(go_fd, &byte, 1) < 0) return 1;  // EOF: go
    size_t next = 0, in_handshake = 0, done = 0, waiting = 0;
    int64_t last_done = 0;
    bool reported_ready = false;
    auto handshake_over = [&](Rank& r) {
      if (r.handshaking) --in_handshake;
      r.handshaking = false;
    };
    auto start_more = [&] {
      for (; next < ranks.size() && in_handshake < window; ++next) {
        Rank& r = ranks[next];
        SocketAddress addr;
        std::string err;
        if (!ResolveAddress(Address(r.rank), port, &addr, &err) || !(r.fd = StartConnect(addr, &err))) {
          run.Fail(r, err);
          ++done;
          continue;
        }
        // Edge-triggered, both directions from the start: the connect's
        // completion is the first EPOLLOUT edge, each reply an EPOLLIN edge;
        // no EPOLL_CTL_MOD per rank, no recv that only says EAGAIN.
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
        ev.data.u64 = next;
        epoll_ctl(ep.get(), EPOLL_CTL_ADD, r.fd.get(), &ev);
        r.handshaking = true;
        ++in_handshake;
      }
    };
    start_more();
    epoll_event evs[256];
    while (done < ranks.size()) {
      int n = epoll_wait(ep.get(), evs, 256, 60'000);
      if (n == 0) {
        run.failures += static_cast<int>(ranks.size() - done);
        if (run.first_error.empty()) run.first_error = "no progress for 60 s";
        break;
      }
      for (int i = 0; i < n; ++i) {
        Rank& r = ranks[evs[i].data.u64];
        if (r.step == Step::kDone) continue;
        if (r.step == Step::kConnect) {
          // A failed connect reports EPOLLERR or EPOLLHUP: only then ask SO_ERROR.
          int e = (evs[i].events & (EPOLLERR | EPOLLHUP)) ? ConnectError(r.fd.get()) : 0;
          if (e != 0 || (evs[i].events & (EPOLLERR | EPOLLHUP))) {
            if (e == 0) e = ECONNRESET;
            handshake_over(r);
            run.Fail(r, fmt::format("connect: {}", std::strerror(e)));
            ++done;
            continue;
          }
          run.Start(r);
        } else {
          // Drained once a read comes back short: more data later is a new
          // edge. A hang-up is no later edge: then read to the EOF.
          bool to_eof = evs[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR);
          char buf[4096];
          ssize_t got;
          while ((got = recv(r.fd.get(), buf, sizeof buf, MSG_DONTWAIT)) > 0) {
            r.in.append(buf, size_t(got));
            if (size_t(got) < sizeof buf && !to_eof) break;
          }
          if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
            handshake_over(r);
            run.Fail(r, got == 0 ? "closed by the server" : std::strerror(errno));
            ++done;
            continue;
          }
          bool advanced = false;
          while (run.Advance(r)) advanced = true;
          if (advanced) handshake_over(r);
          if (r.step == Step::kDone) {
            ++done;
            last_done = NowNs();
            // Stays open: a worker keeps its store client for the job (closed
            // at the end, after the clock stopped for every rank; see Main).
            continue;
          }
        }
        if (!Flush(r)) {
          handshake_over(r);
          run.Fail(r, fmt::format("send: {}", std::strerror(errno)));
          ++done;
        } else if (r.step == Step::kFanoutWait && r.out.empty() && !r.waiting) {
          r.waiting = true;
          ++waiting;
        }
      }
      start_more();
      if (run.fanout && !reported_ready && waiting == ranks.size()) {
        reported_ready = true;
        if (write(report_fd, "r", 1) != 1) return 1;
      }
    }
    std::string line = fmt::format("{} {} {}\n", last_done, run.failures, run.first_error);
    bool written = write(report_fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    close(report_fd);  // the parent reads to EOF
    // The connections close once every process is through (release_fd's
    // EOF), so no rank's close runs while another rank is still timed.
    while (read(release_fd, &byte, 1) > 0) {
    }
    return written ? 0 : 1;
  }
};

// Reads one child's "r" (fan-out ready) or its final line.
std::string ReadAll(int fd) {
  std::string s;
  char buf[512];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) s.append(buf, size_t(n));
  return s;
}

// The fan-out's setter: connected before the waiters (a server busy with
// thousands of connections may take long to accept one more).
UniqueFd ConnectSetter(const std::string& host, int port, const Dialect& d, std::string* err) {
  SocketAddress addr;
  if (!ResolveAddress(host, port, &addr, err)) return {};
  UniqueFd fd = StartConnect(addr, err);
  if (!fd) return {};
  pollfd p{fd.get(), POLLOUT, 0};
  if (poll(&p, 1, 30'000) != 1 || ConnectError(fd.get())) return *err = "setter: cannot connect", UniqueFd();
  std::string out;
  if (d.validate_and_ping) {
    PutU8(&out, v2_op::kValidate);
    PutU32(&out, kStoreValidateMagic);
  }
  if (send(fd.get(), out.data(), out.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(out.size()))
    return *err = "setter: send failed", UniqueFd();
  return fd;
}

bool SetKey(int fd, const Dialect& d, int64_t* set_ns, std::string* err) {
  std::string out;
  PutU8(&out, d.set);
  PutString(&out, kFanoutKey);
  PutString(&out, "go");
  *set_ns = NowNs();
  if (send(fd, out.data(), out.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(out.size()))
    return *err = "setter: send failed", false;
  return true;  // SET has no reply; the connection stays open until the waiters are woken
}

}  // namespace

int main(int argc, char** argv) {
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);

  CLI::App app{"Plays the store traffic of init_process_group(\"nccl\") for N ranks against a "
               "TCPStore server; prints one JSON object"};
  std::string host = "127.0.0.1", dialect = "v2";
  int port = 0, ranks = 16384, procs = 4, window = 2048, pause_ms = 500;
  bool fanout = false;
  app.add_option("--host", host, "address for the fan-out's setter");
  app.add_option("--port", port, "the server's port (it should listen on every address)")->required();
  app.add_option("--ranks", ranks, "simulated ranks (N)")->check(CLI::Range(2, 1 << 20));
  app.add_option("--procs", procs, "client processes (each holds N/procs connections)")
      ->check(CLI::Range(1, 256));
  app.add_option("--dialect", dialect, "v2: a PyTorch 2.x client (VALIDATE, PING); legacy: 1.13")
      ->check(CLI::IsMember({"v2", "legacy"}));
  app.add_option("--window", window, "ranks between connect and first reply, over all processes")
      ->check(CLI::Range(1, 1 << 20));
  app.add_flag("--fanout", fanout, "every rank WAITs on one key; one SET wakes them all");
  app.add_option("--pause-ms", pause_ms, "fan-out: pause after the last WAIT was sent, before the SET");
  CLI11_PARSE(app, argc, argv);
  signal(SIGPIPE, SIG_IGN);

  const Dialect& d = dialect == "v2" ? kV2 : kLegacy;
  std::string err;
  UniqueFd setter;
  if (fanout && !(setter = ConnectSetter(host, port, d, &err)))
    return fmt::print(stderr, "init_load: {}\n", err), 1;
  int go[2], release[2];
  if (pipe(go) != 0 || pipe(release) != 0) return 1;
  std::vector<pid_t> kids;
  std::vector<int> reports;
  int per = (ranks + procs - 1) / procs;
  for (int p = 0; p < procs && p * per < ranks; ++p) {
    int rep[2];
    if (pipe(rep) != 0) return 1;
    pid_t pid = fork();
    if (pid == 0) {
      close(go[1]);
      close(release[1]);
      close(rep[0]);
      Child c;
      c.run.d = d;
      setter.Reset();
      c.run.world = ranks;
      c.run.fanout = fanout;
      c.port = port;
      c.first = p * per;
      c.count = std::min(per, ranks - p * per);
      c.window = static_cast<size_t>(std::max(1, window / procs));
      _exit(c.Main(go[0], rep[1], release[0]));
    }
    close(rep[1]);
    kids.push_back(pid);
    reports.push_back(rep[0]);
  }
  close(go[0]);
  close(release[0]);
  int64_t t0 = NowNs();
  close(go[1]);  // every child reads EOF: go
  int64_t set_ns = 0;
  if (fanout) {
    for (int fd : reports) {
      char r;
      if (read(fd, &r, 1) != 1) return fmt::print(stderr, "init_load: a client process failed\n"), 1;
    }
    usleep(static_cast<useconds_t>(pause_ms) * 1000);
    if (!SetKey(setter.get(), d, &set_ns, &err))
      return fmt::print(stderr, "init_load: {}\n", err), 1;
  }
  int64_t end = 0;
  int failures = 0;
  std::string error;
  for (int fd : reports) {
    std::string line = ReadAll(fd);
    long long done_ns = 0;
    int f = 0;
    char msg[256] = {};
    if (std::sscanf(line.c_str(), "%lld %d %255[^\n]", &done_ns, &f, msg) < 2) f = 1;
    end = std::max<int64_t>(end, done_ns);
    failures += f;
    if (f && error.empty()) error = msg[0] ? msg : "a client process failed";
  }
  close(release[1]);  // every rank is through: the children close their connections and exit
  for (pid_t k : kids) waitpid(k, nullptr, 0);
  rusage ru{};
  getrusage(RUSAGE_CHILDREN, &ru);  // the client processes' CPU: the generator's share of the run
  double client_cpu = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
                      (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  double secs = static_cast<double>(end - (fanout ? set_ns : t0)) / 1e9;
  fmt::print("{{\"mode\":\"{}\",\"dialect\":\"{}\",\"ranks\":{},\"procs\":{},\"window\":{},"
             "\"seconds\":{:.3f},\"client_cpu_s\":{:.2f},\"failures\":{}{}}}\n",
             fanout ? "fanout" : "init", dialect, ranks, kids.size(), window, secs, client_cpu, failures,
             error.empty() ? "" : fmt::format(",\"error\":\"{}\"", error));
  return failures ? 1 : 0;
}
