#include "launcher/zygote.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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

int MillisLeft(MonoClock::time_point deadline) {
  auto left = std::chrono::ceil<Millis>(deadline - MonoClock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 1 << 30));
}

// Waits until `fd` is ready for `events` or `deadline`; false with *err on timeout.
bool WaitFd(int fd, short events, MonoClock::time_point deadline, std::string* err) {
  while (true) {
    pollfd p{fd, events, 0};
    int r = poll(&p, 1, MillisLeft(deadline));
    if (r > 0) return true;
    if (r == 0) {
      *err = "no answer before the deadline";
      return false;
    }
    if (errno != EINTR) {
      *err = fmt::format("poll: {}", strerror(errno));
      return false;
    }
  }
}

bool ReadExact(int fd, char* buf, size_t n, MonoClock::time_point deadline, std::string* err) {
  size_t got = 0;
  while (got < n) {
    if (!WaitFd(fd, POLLIN, deadline, err)) return false;
    ssize_t r = read(fd, buf + got, n - got);
    if (r == 0) {
      *err = "it closed the socket";
      return false;
    }
    if (r < 0 && errno != EINTR && errno != EAGAIN) {
      *err = fmt::format("read: {}", strerror(errno));
      return false;
    }
    if (r > 0) got += static_cast<size_t>(r);
  }
  return true;
}

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
  char buf[4096];
  std::string ended;  // why nothing more can come (its reply may be complete all the same)
  while (ended.empty()) {
    ssize_t n = read(socket_.get(), buf, sizeof buf);
    if (n > 0) {
      incoming_.append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      ended = "it did not say it was ready: it closed the socket";  // "unfit", then exit
    } else if (errno == EAGAIN) {
      break;
    } else if (errno != EINTR) {
      ended = fmt::format("it did not say it was ready: read: {}", strerror(errno));
    }
  }
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

// Ready (why empty) or unusable: from now on Spawn talks to it synchronously.
void Zygote::Settle(const std::string& why) {
  ready_timer_.Cancel();
  incoming_.clear();
  if (socket_ && loop_.Watching(socket_.get())) loop_.Remove(socket_.get());
  if (why_.empty() && state_ == State::kStarting) why_ = why;  // told by the agent
  if (settled_) posted_.Post(std::exchange(settled_, nullptr));
}

bool Zygote::Spawn(const SpawnRequest& request, int stdout_fd, int stderr_fd, ChildHandle* child,
                   std::string* err) {
  if (state_ != State::kReady) {
    *err = "the preloaded interpreter is not ready";
    return false;
  }
  auto deadline = MonoClock::now() + spawn_timeout_;
  ZygoteReply reply;
  bool ok = SendRequest(EncodeSpawnRequest(request), stdout_fd, stderr_fd, deadline, err) &&
            ReadReply(deadline, &reply, err);
  if (ok && reply.kind != ZygoteReplyKind::kSpawned) {
    *err = reply.kind == ZygoteReplyKind::kError ? reply.reason : "an unexpected reply";
    ok = false;
  }
  int fd = -1;
  if (ok) {
    fd = static_cast<int>(syscall(SYS_pidfd_open, reply.pid, 0));
    if (fd < 0) *err = fmt::format("pidfd_open({}): {}", reply.pid, strerror(errno));
  }
  if (fd < 0) {
    Drop(*err);
    return false;
  }
  child->pid = reply.pid;
  child->pidfd.Reset(fd);
  return true;
}

bool Zygote::SendRequest(const std::string& payload, int stdout_fd, int stderr_fd,
                         MonoClock::time_point deadline, std::string* err) {
  std::string frame = FrameHeader(payload.size()) + payload;
  int fds[2] = {stdout_fd, stderr_fd};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
  size_t sent = 0;
  while (sent < frame.size()) {
    if (!WaitFd(socket_.get(), POLLOUT, deadline, err)) return false;
    iovec iov{frame.data() + sent, frame.size() - sent};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (sent == 0) {  // the descriptors ride on the first byte
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof fds);
      memcpy(CMSG_DATA(c), fds, sizeof fds);
    }
    ssize_t n = sendmsg(socket_.get(), &msg, MSG_NOSIGNAL);
    if (n < 0 && errno != EINTR && errno != EAGAIN) {
      *err = fmt::format("sendmsg: {}", strerror(errno));
      return false;
    }
    if (n > 0) sent += static_cast<size_t>(n);
  }
  return true;
}

bool Zygote::ReadReply(MonoClock::time_point deadline, ZygoteReply* reply, std::string* err) {
  char header[4];
  size_t size = 0;
  if (!ReadExact(socket_.get(), header, 4, deadline, err) ||
      !ParseFrameHeader(std::string_view(header, 4), &size, err)) {
    return false;
  }
  std::string payload(size, '\0');
  return ReadExact(socket_.get(), payload.data(), size, deadline, err) &&
         ParseZygoteReply(payload, reply, err);
}

void Zygote::OnExit() {
  WorkerFailure f;
  if (!ReapChild(child_.pid, &f.exit_code, &f.signal)) return;
  reaped_ = true;
  loop_.Remove(child_.pidfd.get());
  if (state_ != State::kGone) {
    Log(LogLevel::kWarning, "the preloaded interpreter (pid {}) exited ({}): workers start normally "
        "from now on", child_.pid, DescribeExit(f));
  }
  Settle("");  // told above
  state_ = State::kGone;
  socket_.Reset();
}

void Zygote::Drop(const std::string& why) {
  Settle(why);
  state_ = State::kGone;
  socket_.Reset();
  if (child_.pidfd && !reaped_) syscall(SYS_pidfd_send_signal, child_.pidfd.get(), SIGKILL, nullptr, 0);
  // Reaped by OnExit when its pidfd turns readable.
}

}  // namespace elastic
