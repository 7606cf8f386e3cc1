#include "launcher/zygote.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <utility>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/log.h"
#include "launcher/failure_report.h"

namespace elastic {
namespace {

constexpr int kZygoteFd = 3;  // the zygote's end of the socket pair (zygote.py)

}  // namespace

std::string ZygoteScript(const std::string& exe) {
  std::string dir = exe.substr(0, exe.rfind('/') == std::string::npos ? 0 : exe.rfind('/'));
  for (const std::string& candidate : {dir + "/../share/slurm-elastic/python", dir + "/python"}) {
    if (access((candidate + "/zygote.py").c_str(), R_OK) == 0) return candidate + "/zygote.py";
  }
  return "";
}

bool ParsePythonCommand(const std::vector<std::string>& argv, const std::string& python, PythonCommand* out) {
  if (argv.empty()) return false;
  std::string name = argv[0].substr(argv[0].rfind('/') == std::string::npos ? 0 : argv[0].rfind('/') + 1);
  if (argv[0] != python && name.rfind("python", 0) != 0) return false;
  PythonCommand c;
  size_t i = 1;
  if (i < argv.size() && argv[i] == "-u") {
    c.unbuffered = true;
    ++i;
  }
  if (i + 1 < argv.size() && argv[i] == "-m") {
    c.module = true;
    ++i;
  } else if (i >= argv.size() || argv[i].empty() || argv[i][0] == '-') {
    return false;
  }
  if (argv[i].empty()) return false;
  c.target = argv[i];
  c.args.assign(argv.begin() + static_cast<long>(i) + 1, argv.end());
  *out = std::move(c);
  return true;
}

SpawnRequest MakeSpawnRequest(const PythonCommand& command, const std::vector<std::string>& env,
                              const std::vector<int>& default_signals, const KernelBinding* binding) {
  SpawnRequest r;
  r.module = command.module;
  r.target = command.target;
  r.args = command.args;
  r.env = env;
  std::error_code ec;
  r.cwd = std::filesystem::current_path(ec).string();
  if (ec) r.cwd = "/";
  r.agent = getpid();
  r.default_signals = default_signals;
  if (binding != nullptr) {
    r.cpu_mask = binding->cpu_mask;
    r.mem_mode = binding->mem_mode;
    r.mem_nodes = binding->mem_nodes;
    r.fallback_mode = binding->fallback_mode;
    r.fallback_nodes = binding->fallback_nodes;
    r.maxnode = binding->maxnode;
  }
  return r;
}

Zygote::~Zygote() {
  if (socket_ && loop_.Watching(socket_.get())) loop_.Remove(socket_.get());
  socket_.Reset();  // the zygote exits at EOF; SIGKILL in case it is busy importing
  if (child_.pidfd) {
    loop_.Remove(child_.pidfd.get());
    if (!reaped_) {
      syscall(SYS_pidfd_send_signal, child_.pidfd.get(), SIGKILL, nullptr, 0);
      waitpid(child_.pid, nullptr, 0);
    }
  }
}

bool Zygote::Start(const ZygoteOptions& o, std::string* err) {
  if (o.ready_timeout <= Millis(0) || o.spawn_timeout <= Millis(0)) {
    *err = fmt::format("its deadlines must be positive: ready_timeout {} ms, spawn_timeout {} ms "
                       "(AgentSettings::zygote_ready_timeout_ms, zygote_spawn_timeout_ms)",
                       o.ready_timeout.count(), o.spawn_timeout.count());
    return false;
  }
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    *err = fmt::format("socketpair: {}", strerror(errno));
    return false;
  }
  socket_.Reset(pair[0]);
  // Above fd 3, so that dup2 onto 3 always clears close-on-exec.
  UniqueFd theirs(fcntl(pair[1], F_DUPFD_CLOEXEC, 10));
  close(pair[1]);
  if (!theirs) {
    *err = fmt::format("fcntl(F_DUPFD_CLOEXEC): {}", strerror(errno));
    return false;
  }
  ChildSpec spec;
  spec.path = o.python;
  spec.argv = {o.python};
  if (o.unbuffered) spec.argv.push_back("-u");
  spec.argv.push_back(o.script);
  spec.argv.push_back(fmt::format("{}", fmt::join(o.modules, ",")));
  spec.env = o.env;
  spec.env.push_back(fmt::format("ELASTIC_ZYGOTE_FD={}", kZygoteFd));
  spec.child_mask = o.child_mask;
  spec.default_signals = o.default_signals;
  int fd = theirs.get();
  spec.in_child = [fd](const char** call) {
    *call = "dup2";
    return dup2(fd, kZygoteFd) < 0 ? errno : 0;
  };
  spec.in_child_what = "the preloaded interpreter's socket";
  if (!SpawnChild(spec, &child_, err)) return false;
  state_ = State::kStarting;
  spawn_timeout_ = o.spawn_timeout;
  fcntl(socket_.get(), F_SETFL, O_NONBLOCK);
  if (!loop_.Add(child_.pidfd.get(), EPOLLIN, [this](uint32_t) { OnExit(); }, err) ||
      !loop_.Add(socket_.get(), EPOLLIN, [this](uint32_t) { OnReadable(); }, err)) {
    Drop(*err);
    return false;
  }
  Millis timeout = o.ready_timeout;
  ready_timer_ = loop_.After(timeout, [this, timeout] {
    Drop(fmt::format("it did not say it was ready within {} s", timeout.count() / 1000.0));
  });
  return true;
}

void Zygote::WhenSettled(std::function<void()> settled) {
  if (starting()) {
    settled_ = std::move(settled);
  } else {
    posted_.Post(std::move(settled));
  }
}

// The first reply (ready or unfit), read as it comes: a frame header, then its payload.
void Zygote::OnReadable() {
  std::string ended;  // why nothing more can come (its reply may be complete all the same)
  if (!ReadIncoming(&ended)) ended = "it did not say it was ready: " + ended;  // "unfit", then exit
  size_t size = 0;
  std::string err;
  if (incoming_.size() >= 4 && !ParseFrameHeader(std::string_view(incoming_).substr(0, 4), &size, &err)) {
    Drop(fmt::format("it did not say it was ready: {}", err));
    return;
  }
  if (incoming_.size() < 4 || incoming_.size() < 4 + size) {
    if (!ended.empty()) Drop(ended);
    return;
  }
  if (incoming_.size() > 4 + size) {
    Drop("it said more than ready before it was asked anything");
    return;
  }
  ZygoteReply reply;
  if (!ParseZygoteReply(incoming_.substr(4), &reply, &err)) {
    Drop(fmt::format("it did not say it was ready: {}", err));
  } else if (reply.kind == ZygoteReplyKind::kUnfit) {
    Drop(reply.reason);
  } else if (reply.kind != ZygoteReplyKind::kReady) {
    Drop(fmt::format("it answered '{}' instead of ready", reply.reason));
  } else {
    Log(LogLevel::kDebug, "preloaded interpreter ready (pid {}, imported {})", child_.pid, reply.modules);
    Settle("");
    state_ = State::kReady;
  }
}

// Ready (why empty) or unusable: from now on the socket is watched only while a
// spawn request is pending.
void Zygote::Settle(const std::string& why) {
  ready_timer_.Cancel();
  incoming_.clear();
  if (socket_ && loop_.Watching(socket_.get())) loop_.Remove(socket_.get());
  if (why_.empty() && state_ == State::kStarting) why_ = why;  // told by the agent
  if (settled_) posted_.Post(std::exchange(settled_, nullptr));
}

// Reads what the socket holds into incoming_; false once nothing more can come
// (*ended says why; what was read may still be a complete reply).
bool Zygote::ReadIncoming(std::string* ended) {
  char buf[4096];
  while (true) {
    ssize_t n = read(socket_.get(), buf, sizeof buf);
    if (n > 0) {
      incoming_.append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      *ended = "it closed the socket";
      return false;
    } else if (errno == EAGAIN) {
      return true;
    } else if (errno != EINTR) {
      *ended = fmt::format("read: {}", strerror(errno));
      return false;
    }
  }
}

void Zygote::Spawn(const SpawnRequest& request, int stdout_fd, int stderr_fd, SpawnDone done) {
  if (state_ != State::kReady) {
    posted_.Post([done = std::move(done)] { done(false, ChildHandle{}, "the preloaded interpreter is not ready"); });
    return;
  }
  Request r;
  std::string payload = EncodeSpawnRequest(request);
  r.frame = FrameHeader(payload.size()) + payload;
  r.out.Reset(fcntl(stdout_fd, F_DUPFD_CLOEXEC, 0));
  r.err.Reset(fcntl(stderr_fd, F_DUPFD_CLOEXEC, 0));
  r.done = std::move(done);
  bool duplicated = r.out && r.err;
  std::string dup_error = duplicated ? "" : fmt::format("fcntl(F_DUPFD_CLOEXEC): {}", strerror(errno));
  requests_.push_back(std::move(r));
  if (!duplicated) {
    Drop(dup_error);
  } else if (requests_.size() == 1) {
    SendHead();
  }
}

// Sends what the socket takes of the head request (the descriptors ride on its
// first byte), then waits for the rest to go and for the reply as loop events.
// Its deadline starts with its first byte: the zygote answers one at a time.
void Zygote::SendHead() {
  Request& r = requests_.front();
  if (!spawn_timer_.armed()) {
    Millis timeout = spawn_timeout_;
    spawn_timer_ = loop_.After(timeout, [this, timeout] {
      Drop(fmt::format("no answer within {} s", timeout.count() / 1000.0));
    });
  }
  while (r.sent < r.frame.size()) {
    int fds[2] = {r.out.get(), r.err.get()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
    iovec iov{r.frame.data() + r.sent, r.frame.size() - r.sent};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (r.sent == 0) {
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof fds);
      memcpy(CMSG_DATA(c), fds, sizeof fds);
    }
    ssize_t n = sendmsg(socket_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EAGAIN) break;
    if (n < 0 && errno != EINTR) {
      Drop(fmt::format("sendmsg: {}", strerror(errno)));
      return;
    }
    if (n <= 0) continue;
    if (r.sent == 0) {  // in flight: the zygote holds its own copies now
      r.out.Reset();
      r.err.Reset();
    }
    r.sent += static_cast<size_t>(n);
  }
  uint32_t events = EPOLLIN | (r.sent < r.frame.size() ? EPOLLOUT : 0u);
  std::string err;
  bool ok = loop_.Watching(socket_.get())
                ? loop_.Modify(socket_.get(), events, &err)
                : loop_.Add(socket_.get(), events, [this](uint32_t e) { OnSocket(e); }, &err);
  if (!ok) Drop(err);
}

void Zygote::OnSocket(uint32_t events) {
  if (requests_.empty()) return;
  if (requests_.front().sent < requests_.front().frame.size() && (events & ~EPOLLIN)) {
    SendHead();
    if (state_ != State::kReady) return;
  }
  std::string ended;
  bool open = ReadIncoming(&ended);
  while (state_ == State::kReady && !requests_.empty()) {
    size_t size = 0;
    std::string err;
    if (incoming_.size() >= 4 && !ParseFrameHeader(std::string_view(incoming_).substr(0, 4), &size, &err)) {
      Drop(err);
      return;
    }
    if (incoming_.size() < 4 || incoming_.size() < 4 + size) break;
    std::string payload = incoming_.substr(4, size);
    incoming_.erase(0, 4 + size);
    OnReply(payload);
  }
  if (state_ == State::kReady && !open) Drop(ended);
}

// The head request's reply: its worker, or the zygote is given up (as every failure).
void Zygote::OnReply(const std::string& payload) {
  ZygoteReply reply;
  std::string err;
  if (!ParseZygoteReply(payload, &reply, &err)) {
    Drop(err);
    return;
  }
  if (reply.kind != ZygoteReplyKind::kSpawned) {
    Drop(reply.kind == ZygoteReplyKind::kError ? reply.reason : "an unexpected reply");
    return;
  }
  int fd = static_cast<int>(syscall(SYS_pidfd_open, reply.pid, 0));
  if (fd < 0) {
    Drop(fmt::format("pidfd_open({}): {}", reply.pid, strerror(errno)));
    return;
  }
  ChildHandle child;
  child.pid = reply.pid;
  child.pidfd.Reset(fd);
  Request done = std::move(requests_.front());
  requests_.pop_front();
  spawn_timer_.Cancel();
  if (!requests_.empty()) {
    SendHead();
  } else {
    loop_.Remove(socket_.get());
  }
  // At once, not posted: until its pid is known the caller may not reap (zygote.h).
  done.done(true, std::move(child), "");
}

void Zygote::FailRequests(const std::string& why) {
  spawn_timer_.Cancel();
  for (Request& r : requests_) {
    posted_.Post([done = std::move(r.done), why] { done(false, ChildHandle{}, why); });
  }
  requests_.clear();
}

void Zygote::OnExit() {
  WorkerFailure f;
  if (!ReapChild(child_.pid, &f.exit_code, &f.signal)) return;
  reaped_ = true;
  loop_.Remove(child_.pidfd.get());
  bool was_usable = state_ != State::kGone;
  // Replies it sent before it died are still in the socket: a worker it forked is ours.
  if (!requests_.empty() && socket_) OnSocket(EPOLLIN);
  FailRequests(fmt::format("it exited ({})", DescribeExit(f)));
  if (was_usable) {
    Log(stopping_ ? LogLevel::kDebug : LogLevel::kWarning,
        "the preloaded interpreter (pid {}) exited ({}): workers start normally "
        "from now on", child_.pid, DescribeExit(f));
  }
  Settle("");  // told above
  state_ = State::kGone;
  socket_.Reset();
}

void Zygote::Drop(const std::string& why) {
  Settle(why);
  FailRequests(why);
  state_ = State::kGone;
  socket_.Reset();
  if (child_.pidfd && !reaped_) syscall(SYS_pidfd_send_signal, child_.pidfd.get(), SIGKILL, nullptr, 0);
  // Reaped by OnExit when its pidfd turns readable.
}

}  // namespace elastic
