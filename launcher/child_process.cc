#include "launcher/child_process.h"

#include <errno.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <initializer_list>
#include <memory>

#include <fmt/format.h>

namespace elastic {
namespace {

struct ChildArgs {
  const ChildSpec* spec;
  pid_t parent;
  char* const* argv;
  char* const* envp;
};

// The child runs on its own stack: ASan would take its noreturn calls (_exit,
// RunChild) for a stack switch it cannot follow and warn on the agent's stderr.
#define ELASTIC_CHILD_CODE __attribute__((no_sanitize_address))

// No allocation from here to exec: the child shares the agent's memory.
ELASTIC_CHILD_CODE void WriteStderr(std::initializer_list<const char*> parts) {
  iovec iov[8];
  int n = 0;
  for (const char* part : parts) {
    if (part == nullptr) part = "unknown error";
    if (n == 8) break;
    iov[n].iov_base = const_cast<char*>(part);
    iov[n].iov_len = strlen(part);
    ++n;
  }
  ssize_t unused = writev(STDERR_FILENO, iov, n);
  (void)unused;
}

// In the child, between clone and exec. Never returns.
[[noreturn]] ELASTIC_CHILD_CODE void RunChild(const ChildArgs& a) {
  const ChildSpec& spec = *a.spec;
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != a.parent) _exit(128 + SIGKILL);  // the agent is already gone
  for (int sig : spec.default_signals) signal(sig, SIG_DFL);
  signal(SIGPIPE, SIG_DFL);
  if (spec.stdout_fd >= 0 && dup2(spec.stdout_fd, STDOUT_FILENO) < 0) _exit(127);
  if (spec.stderr_fd >= 0 && dup2(spec.stderr_fd, STDERR_FILENO) < 0) _exit(127);
  if (spec.in_child) {
    const char* call = "";
    if (int e = spec.in_child(&call)) {
      WriteStderr({"elasticrun: warning: ", spec.in_child_what.c_str(), ": ", call, ": ", strerrordesc_np(e), "\n"});
    }
  }
  // Unblocked last: a signal before exec finds default dispositions only.
  sigprocmask(SIG_SETMASK, &spec.child_mask, nullptr);
  execve(spec.path.c_str(), a.argv, a.envp);
  const char* why = strerrordesc_np(errno);
  WriteStderr({"elasticrun: cannot execute '", spec.path.c_str(), "': ", why ? why : "error", "\n"});
  _exit(127);
}

ELASTIC_CHILD_CODE int ChildMain(void* arg) { RunChild(*static_cast<const ChildArgs*>(arg)); }

// The child's stack until exec (CLONE_VFORK: the calling thread waits until
// then), with a guard page below it, as posix_spawn's.
class ChildStack {
 public:
  static constexpr size_t kSize = 256 * 1024;
  ChildStack() {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void* p = mmap(nullptr, kSize + page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (p == MAP_FAILED) return;
    base_ = static_cast<char*>(p);
    mprotect(base_, page_, PROT_NONE);
  }
  ~ChildStack() {
    if (base_) munmap(base_, kSize + page_);
  }
  ChildStack(const ChildStack&) = delete;
  ChildStack& operator=(const ChildStack&) = delete;
  char* top() const { return base_ ? base_ + page_ + kSize : nullptr; }

 private:
  char* base_ = nullptr;
  size_t page_ = 4096;
};

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

bool SpawnChild(const ChildSpec& spec, ChildHandle* child, std::string* err) {
  std::vector<char*> argv = CStrings(spec.argv);
  std::vector<char*> envp = CStrings(spec.env);
  ChildArgs args{&spec, getpid(), argv.data(), envp.data()};
  ChildStack stack;
  if (!stack.top()) {
    *err = fmt::format("mmap of a {} KiB stack for the worker: {}", ChildStack::kSize / 1024, strerror(errno));
    return false;
  }
  pid_t pid = clone(ChildMain, stack.top(), CLONE_VM | CLONE_VFORK | SIGCHLD, &args);
  if (pid < 0) {
    *err = fmt::format("clone: {}", strerror(errno));
    return false;
  }
  setpgid(pid, pid);  // the child did it before exec; EACCES after exec is fine
  int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) {
    *err = fmt::format("pidfd_open({}): {} (Linux >= 5.3 needed)", pid, strerror(errno));
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return false;
  }
  child->pid = pid;
  child->pidfd.Reset(fd);  // pidfd_open sets O_CLOEXEC
  return true;
}

bool ReapChild(pid_t pid, int* exit_code, int* signal) {
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r != pid) return false;
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
  *signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return true;
}

bool SignalGroup(pid_t pgid, int sig) {
  if (pgid <= 1) return false;
  return kill(-pgid, sig) == 0;
}

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  if (abbrev != nullptr) return std::string("SIG") + abbrev;
  return fmt::format("signal {}", sig);
}

}  // namespace elastic
