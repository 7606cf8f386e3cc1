#include "launcher/child_process.h"

#include <errno.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

namespace elastic {
namespace {

void WriteStderr(const std::string& text) {
  ssize_t unused = write(STDERR_FILENO, text.data(), text.size());
  (void)unused;
}

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// In the child, between fork and exec. Never returns.
[[noreturn]] void RunChild(const ChildSpec& spec, pid_t parent, char* const* argv, char* const* envp) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(128 + SIGKILL);  // the agent is already gone
  for (int sig : spec.default_signals) signal(sig, SIG_DFL);
  signal(SIGPIPE, SIG_DFL);
  sigprocmask(SIG_SETMASK, &spec.child_mask, nullptr);
  if (spec.stdout_fd >= 0 && dup2(spec.stdout_fd, STDOUT_FILENO) < 0) _exit(127);
  if (spec.stderr_fd >= 0 && dup2(spec.stderr_fd, STDERR_FILENO) < 0) _exit(127);
  if (spec.before_exec) {
    std::string err;
    if (!spec.before_exec(&err)) WriteStderr("elasticrun: warning: " + err + "\n");
  }
  execve(spec.path.c_str(), argv, envp);
  WriteStderr(fmt::format("elasticrun: cannot execute '{}': {}\n", spec.path, strerror(errno)));
  _exit(127);
}

}  // namespace

bool SpawnChild(const ChildSpec& spec, ChildHandle* child, std::string* err) {
  std::vector<char*> argv = CStrings(spec.argv);
  std::vector<char*> envp = CStrings(spec.env);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    *err = fmt::format("fork: {}", strerror(errno));
    return false;
  }
  if (pid == 0) RunChild(spec, parent, argv.data(), envp.data());
  setpgid(pid, pid);  // also in the child: whichever runs first wins; EACCES after exec is fine
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
