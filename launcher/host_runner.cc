#include "launcher/host_runner.h"

#include <fcntl.h>
#include <stddef.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>

#include <fmt/format.h>

#include "common/log.h"
#include "common/log_escape.h"
#include "common/parse.h"

namespace elastic {
namespace {

constexpr size_t kMaxFdsPerMessage = 2;
constexpr const char* kDefaultHostPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// False with *err (and *would_block when the socket is full) when it was not sent.
bool SendMessage(int socket, const std::string& payload, const int* fds, size_t nfds, std::string* err,
                 bool* would_block = nullptr) {
  iovec iov{const_cast<char*>(payload.data()), payload.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)] = {};
  if (nfds > 0) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
  }
  ssize_t n;
  do n = sendmsg(socket, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (would_block) *would_block = errno == EAGAIN || errno == EWOULDBLOCK;
    *err = strerror(errno);
    return false;
  }
  return true;
}

// One datagram and the descriptors that came with it. 1: a message; 0: the
// peer closed; -1: nothing now (EAGAIN); -2: an error (*err).
int ReceiveMessage(int socket, std::string* payload, std::vector<UniqueFd>* fds, std::string* err) {
  payload->resize(kMaxHostRunnerMessage + 1);
  iovec iov{payload->data(), payload->size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 8)] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do n = recvmsg(socket, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return -1;
    *err = strerror(errno);
    return -2;
  }
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fds->emplace_back(fd);
    }
  }
  if (n == 0 && fds->empty()) return 0;
  if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
    *err = fmt::format("a message over {} bytes or with too many descriptors (dropped)", kMaxHostRunnerMessage);
    payload->clear();
    return 1;
  }
  payload->resize(static_cast<size_t>(n));
  return 1;
}

}  // namespace

std::vector<std::string> HostRunEnv(const std::vector<std::string>& requested, const std::string& host_path) {
  std::vector<std::string> env;
  for (const std::string& kv : requested) {
    if (kv.starts_with("PATH=") || kv.starts_with("LD_LIBRARY_PATH=") || kv.starts_with("LD_PRELOAD=")) continue;
    env.push_back(kv);
  }
  env.push_back("PATH=" + (host_path.empty() ? std::string(kDefaultHostPath) : host_path));
  return env;
}

// ---------------------------------------------------------------- the runner

HostRunner::HostRunner(EventLoop& loop, UniqueFd socket, std::string host_path)
    : loop_(loop), socket_(std::move(socket)), host_path_(std::move(host_path)) {}

HostRunner::~HostRunner() {
  if (!finished_) Stop("");
}

bool HostRunner::Start(std::string* err) {
  return loop_.Add(socket_.get(), EPOLLIN, [this](uint32_t e) { OnSocket(e); }, err);
}

void HostRunner::Stop(const std::string& why) {
  if (finished_) return;
  finished_ = true;
  if (!why.empty()) Log(LogLevel::kDebug, "host runner: {}", why);
  if (socket_) loop_.Remove(socket_.get());
  for (auto& [id, run] : runs_) {
    loop_.Remove(run.child.pidfd.get());
    SignalGroup(run.child.pid, SIGKILL);
    waitpid(run.child.pid, nullptr, 0);  // at the end only: SIGKILL is not refused
  }
  runs_.clear();
  loop_.Stop();
}

void HostRunner::OnSocket(uint32_t events) {
  if (events & EPOLLOUT) Flush();
  if (finished_ || !(events & (EPOLLIN | EPOLLHUP | EPOLLERR))) return;
  for (int i = 0; i < 64 && !finished_; ++i) {  // a bounded batch per wakeup
    std::string payload, err;
    std::vector<UniqueFd> fds;
    int got = ReceiveMessage(socket_.get(), &payload, &fds, &err);
    if (got == -1) return;
    // SOCK_SEQPACKET reads an empty datagram as 0 too: the end only with a hangup.
    if (got == 0 && !(events & (EPOLLHUP | EPOLLRDHUP))) continue;
    if (got == 0) return Stop("the agent's end closed");
    if (got == -2) return Stop("recvmsg: " + err);
    if (!err.empty()) {
      Log(LogLevel::kWarning, "host runner: {}", err);
      continue;
    }
    OnRequest(payload, std::move(fds));
  }
}

void HostRunner::OnRequest(const std::string& payload, std::vector<UniqueFd> fds) {
  HostRequest request;
  std::string err;
  if (!ParseHostRequest(payload, &request, &err)) {
    Log(LogLevel::kWarning, "host runner: {} (dropped)", err);
    return;
  }
  if (request.kind == HostRequestKind::kCancel) {
    auto it = runs_.find(request.id);
    if (it == runs_.end()) return;  // already over: its reply is on the way
    it->second.cancelled = true;
    SignalGroup(it->second.child.pid, SIGKILL);  // its pidfd reports the end
    return;
  }
  StartRun(request, std::move(fds));
}

void HostRunner::StartRun(const HostRequest& request, std::vector<UniqueFd> fds) {
  HostReply refusal;
  refusal.kind = HostReplyKind::kError;
  refusal.id = request.id;
  if (fds.size() != 2) {
    refusal.reason = fmt::format("{} descriptor(s) came with the run (2 expected: stdout, stderr)", fds.size());
    return Reply(refusal);
  }
  if (runs_.count(request.id)) {
    refusal.reason = fmt::format("run {} is already running", request.id);
    return Reply(refusal);
  }
  if (runs_.size() >= kMaxHostRuns) {
    refusal.reason = fmt::format("{} runs at once already (the host runner's limit)", kMaxHostRuns);
    return Reply(refusal);
  }
  ChildSpec spec;
  spec.path = "/bin/sh";
  spec.argv = {"/bin/sh", "-c", request.command};
  spec.env = HostRunEnv(request.env, host_path_);
  spec.stdout_fd = fds[0].get();
  spec.stderr_fd = fds[1].get();
  sigemptyset(&spec.child_mask);
  spec.default_signals = {SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGUSR1, SIGUSR2};
  Run run;
  std::string err;
  if (!SpawnChild(spec, &run.child, &err)) {
    refusal.reason = err;
    return Reply(refusal);
  }
  uint64_t id = request.id;
  if (!loop_.Add(run.child.pidfd.get(), EPOLLIN, [this, id](uint32_t) { OnRunExit(id); }, &err)) {
    SignalGroup(run.child.pid, SIGKILL);
    waitpid(run.child.pid, nullptr, 0);
    refusal.reason = err;
    return Reply(refusal);
  }
  auto [it, inserted] = runs_.emplace(id, std::move(run));
  it->second.timeout = loop_.After(std::chrono::milliseconds(request.timeout_ms), [this, id] {
    auto r = runs_.find(id);
    if (r == runs_.end()) return;
    r->second.timed_out = true;
    SignalGroup(r->second.child.pid, SIGKILL);
  });
}

void HostRunner::OnRunExit(uint64_t id) {
  auto it = runs_.find(id);
  if (it == runs_.end()) return;
  HostReply reply;
  reply.id = id;
  if (!ReapChild(it->second.child.pid, &reply.exit_code, &reply.signal)) return;
  loop_.Remove(it->second.child.pidfd.get());
  SignalGroup(it->second.child.pid, SIGKILL);  // what it left in its group goes with it
  reply.timed_out = it->second.timed_out;
  bool cancelled = it->second.cancelled;
  runs_.erase(it);
  if (!cancelled) Reply(reply);
}

void HostRunner::Reply(const HostReply& reply) {
  outbox_.push_back(EncodeHostReply(reply));
  Flush();
}

void HostRunner::Flush() {
  while (!outbox_.empty() && !finished_) {
    std::string err;
    bool full = false;
    if (!SendMessage(socket_.get(), outbox_.front(), nullptr, 0, &err, &full)) {
      if (full) break;
      return Stop("sendmsg: " + err);
    }
    outbox_.erase(outbox_.begin());
  }
  if (finished_) return;
  std::string err;
  loop_.Modify(socket_.get(), EPOLLIN | (outbox_.empty() ? 0u : static_cast<uint32_t>(EPOLLOUT)), &err);
}

// ---------------------------------------------------------------- the client

HostRunnerClient::HostRunnerClient(EventLoop& loop, UniqueFd socket) : loop_(loop), socket_(std::move(socket)) {}

HostRunnerClient::~HostRunnerClient() {
  if (socket_ && loop_.Watching(socket_.get())) loop_.Remove(socket_.get());
}

bool HostRunnerClient::Start(std::string* err) {
  return loop_.Add(socket_.get(), EPOLLIN, [this](uint32_t e) { OnSocket(e); }, err);
}

uint64_t HostRunnerClient::Run(const std::string& command, const std::vector<std::string>& env,
                               std::chrono::milliseconds timeout, int stdout_fd, int stderr_fd,
                               std::function<void(const HostRunResult&)> done, std::string* err) {
  if (!alive_) {
    *err = "the host runner has ended";
    return 0;
  }
  HostRequest request;
  request.id = next_id_++;
  request.command = command;
  request.timeout_ms = timeout.count();
  request.env = env;
  std::string payload = EncodeHostRequest(request);
  if (payload.size() > kMaxHostRunnerMessage) {
    *err = fmt::format("the request ({} bytes, its environment included) is over the host runner's {} bytes",
                       payload.size(), kMaxHostRunnerMessage);
    return 0;
  }
  int fds[2] = {stdout_fd, stderr_fd};
  if (!SendMessage(socket_.get(), payload, fds, 2, err)) {
    *err = "cannot reach the host runner: " + *err;
    return 0;
  }
  uint64_t id = request.id;
  Pending& p = pending_[id];
  p.done = std::move(done);
  p.deadline = loop_.After(timeout + std::chrono::milliseconds(kHostRunnerGraceMs), [this, id] {
    HostRunResult r;
    r.timed_out = true;
    r.error = "the host runner did not answer in time";
    SendCancel(id);
    Finish(id, r);
  });
  return id;
}

void HostRunnerClient::Cancel(uint64_t id) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  pending_.erase(it);
  SendCancel(id);
}

void HostRunnerClient::SendCancel(uint64_t id) {
  if (!alive_) return;
  HostRequest request;
  request.kind = HostRequestKind::kCancel;
  request.id = id;
  std::string err;
  SendMessage(socket_.get(), EncodeHostRequest(request), nullptr, 0, &err);  // best effort: the run has its own deadline
}

void HostRunnerClient::Finish(uint64_t id, const HostRunResult& result) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  auto done = std::move(it->second.done);
  pending_.erase(it);
  loop_.Post([done, result] { done(result); });
}

void HostRunnerClient::Gone(const std::string& why) {
  if (!alive_) return;
  alive_ = false;
  loop_.Remove(socket_.get());
  Log(LogLevel::kWarning, "the host runner (side programs on the node: docs/containers.md) has ended ({}): "
      "scontrol and health checks run here from now on", why);
  std::vector<uint64_t> ids;
  for (const auto& [id, p] : pending_) ids.push_back(id);
  HostRunResult r;
  r.error = "the host runner ended before the program did";
  for (uint64_t id : ids) Finish(id, r);
}

void HostRunnerClient::OnSocket(uint32_t events) {
  if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR))) return;
  for (int i = 0; i < 64 && alive_; ++i) {
    std::string payload, err;
    std::vector<UniqueFd> fds;  // none expected; closed if any
    int got = ReceiveMessage(socket_.get(), &payload, &fds, &err);
    if (got == -1) return;
    if (got == 0 && !(events & (EPOLLHUP | EPOLLRDHUP))) continue;
    if (got == 0) return Gone("its end closed");
    if (got == -2) return Gone("recvmsg: " + err);
    HostReply reply;
    if (!err.empty() || !ParseHostReply(payload, &reply, &err)) {
      Log(LogLevel::kWarning, "host runner: {} (ignored)", err);
      continue;
    }
    HostRunResult r;
    if (reply.kind == HostReplyKind::kError) {
      r.error = reply.reason;
    } else {
      r.exit_code = reply.exit_code;
      r.signal = reply.signal;
      r.timed_out = reply.timed_out;
    }
    Finish(reply.id, r);
  }
}

// ---------------------------------------------------------------- OCI: by name

bool AbstractSocketAddress(const std::string& at_name, sockaddr_un* addr, socklen_t* len, std::string* err) {
  std::string name = at_name.starts_with('@') ? at_name.substr(1) : "";
  if (name.empty() || name.size() > sizeof(addr->sun_path) - 1) {
    *err = fmt::format("'{}' is no abstract socket name ('@' and 1 to {} bytes)", EscapeForLog(at_name, 40),
                       sizeof(addr->sun_path) - 1);
    return false;
  }
  *addr = sockaddr_un{};
  addr->sun_family = AF_UNIX;
  memcpy(addr->sun_path + 1, name.data(), name.size());  // sun_path[0] = 0: abstract
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return true;
}

HostRunnerListener::HostRunnerListener(EventLoop& loop, UniqueFd listener, uid_t uid,
                                       std::function<void(UniqueFd)> on_agent)
    : loop_(loop), listener_(std::move(listener)), uid_(uid), on_agent_(std::move(on_agent)) {}

HostRunnerListener::~HostRunnerListener() {
  if (listener_ && loop_.Watching(listener_.get())) loop_.Remove(listener_.get());
}

bool HostRunnerListener::Start(std::string* err) {
  return loop_.Add(listener_.get(), EPOLLIN, [this](uint32_t) { OnListener(); }, err);
}

void HostRunnerListener::OnListener() {
  for (int i = 0; i < 64 && !accepted_; ++i) {  // a bounded batch per wakeup
    UniqueFd peer(accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!peer) return;  // EAGAIN, or a peer gone before we took it
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(peer.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != uid_) {
      ++refused_;
      Log(LogLevel::kWarning, "host runner: refused a connection from uid {} pid {} (only the job's user, uid {})",
          static_cast<long>(cred.uid), static_cast<long>(cred.pid), static_cast<long>(uid_));
      continue;
    }
    accepted_ = true;
    loop_.Remove(listener_.get());
    listener_.Reset();
    on_agent_(std::move(peer));
  }
}

// ---------------------------------------------------------------- the process

namespace {

int ConnectHostRunner(const std::string& name, std::string* warning) {
  sockaddr_un addr;
  socklen_t len = 0;
  std::string err;
  UniqueFd fd(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!AbstractSocketAddress(name, &addr, &len, &err) || !fd ||
      connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    *warning = fmt::format("{}: cannot reach the host runner ({}; a container with a network namespace of its "
                           "own cannot): scontrol and health checks run here",
                           kHostRunnerSocketEnv, err.empty() ? strerror(errno) : err);
    return -1;
  }
  return fd.Release();
}

}  // namespace

int AdoptHostRunnerFd(std::string* warning) {
  const char* by_name = getenv(kHostRunnerSocketEnv);
  std::string name = by_name ? by_name : "";
  unsetenv(kHostRunnerSocketEnv);
  const char* value = getenv(kHostRunnerFdEnv);
  if (value == nullptr) return name.empty() ? -1 : ConnectHostRunner(name, warning);
  std::string text = value;
  unsetenv(kHostRunnerFdEnv);
  long long fd = 0;
  struct stat st{};
  if (!ParseInt(text, 3, 1 << 20, &fd) || fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) {
    *warning = fmt::format("{}='{}' names no socket of this process: scontrol and health checks run here",
                           kHostRunnerFdEnv, EscapeForLog(text, 40));
    return -1;
  }
  fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
  return static_cast<int>(fd);
}

namespace {

constexpr const char* kHostRunnerUsage =
    "usage: elasticrun host-runner --fd=N | --listen-fd=N --task-pidfd=M; the SPANK plugin starts it: "
    "docs/containers.md";

bool IsSocket(long long fd) {
  struct stat st{};
  return fd >= 0 && fstat(static_cast<int>(fd), &st) == 0 && S_ISSOCK(st.st_mode);
}

}  // namespace

int HostRunnerMain(const std::vector<std::string>& args) {
  long long fd = -1, listen_fd = -1, task_pidfd = -1;
  for (const std::string& a : args) {
    std::string err;
    auto number = [&](const char* name, long long* out) {
      std::string prefix = std::string(name) + "=";
      if (!a.starts_with(prefix)) return false;
      if (!ParseIntNamed(name, a.substr(prefix.size()), 0, 1 << 20, out, &err)) *out = -2;
      return true;
    };
    if (!number("--fd", &fd) && !number("--listen-fd", &listen_fd) && !number("--task-pidfd", &task_pidfd)) {
      Log(LogLevel::kError, "host-runner: unknown argument '{}' ({})", EscapeForLog(a, 80), kHostRunnerUsage);
      return 2;
    }
    if (!err.empty()) {
      Log(LogLevel::kError, "host-runner: {}", err);
      return 2;
    }
  }
  bool listening = listen_fd >= 0 || task_pidfd >= 0;
  if (listening ? fd >= 0 || !IsSocket(listen_fd) || task_pidfd < 0 : !IsSocket(fd)) {
    Log(LogLevel::kError, "host-runner: {} ({})",
        listening ? "--listen-fd=N must name a listening socket and --task-pidfd=M the task's pidfd"
                  : "--fd=N must name a socket of this process",
        kHostRunnerUsage);
    return 2;
  }
  for (long long d : {fd, listen_fd, task_pidfd})
    if (d >= 0) fcntl(static_cast<int>(d), F_SETFD, FD_CLOEXEC);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGUSR1, SIG_IGN);
  signal(SIGUSR2, SIG_IGN);
  sigset_t ends;
  sigemptyset(&ends);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&ends, sig);
  sigprocmask(SIG_BLOCK, &ends, nullptr);
  UniqueFd sigfd(signalfd(-1, &ends, SFD_CLOEXEC | SFD_NONBLOCK));
  const char* path = getenv("PATH");
  EventLoop loop;
  std::unique_ptr<HostRunner> runner;
  std::unique_ptr<HostRunnerListener> listener;
  UniqueFd task(listening ? static_cast<int>(task_pidfd) : -1);
  auto stop = [&](const std::string& why) {
    if (runner) runner->Stop(why);
    else loop.Stop();
  };
  std::string err;
  bool ok = static_cast<bool>(sigfd);
  if (ok && !listening) {
    runner = std::make_unique<HostRunner>(loop, UniqueFd(static_cast<int>(fd)), path ? path : "");
    ok = runner->Start(&err);
  }
  if (ok && listening) {
    listener = std::make_unique<HostRunnerListener>(
        loop, UniqueFd(static_cast<int>(listen_fd)), getuid(), [&](UniqueFd agent) {
          runner = std::make_unique<HostRunner>(loop, std::move(agent), path ? path : "");
          std::string why;
          if (!runner->Start(&why)) stop("cannot serve the agent: " + why);
        });
    // The task's end (the container's, with its agent) ends the runner, also when
    // no agent ever came (a container that did not start).
    ok = listener->Start(&err) &&
         loop.Add(task.get(), EPOLLIN, [&](uint32_t) { loop.Remove(task.get()); stop("the task ended"); }, &err);
  }
  ok = ok && loop.Add(sigfd.get(), EPOLLIN, [&](uint32_t) {
    signalfd_siginfo info{};
    if (read(sigfd.get(), &info, sizeof info) == sizeof info)
      stop(fmt::format("{}: ending", SignalName(static_cast<int>(info.ssi_signo))));
  }, &err);
  if (!ok) {
    Log(LogLevel::kError, "host-runner: {}", err.empty() ? std::string("signalfd failed") : err);
    return 1;
  }
  loop.Run();
  return 0;
}

}  // namespace elastic
