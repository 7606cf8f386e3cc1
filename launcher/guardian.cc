#include "launcher/guardian.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "common/log.h"
#include "common/unique_fd.h"
#include "launcher/descendants.h"
#include "launcher/exit_codes.h"
#include "launcher/launch_config.h"

namespace elastic {
namespace {

// Every signal --signals-to-handle accepts, plus SIGUSR1/SIGUSR2 the agent always
// forwards: a signal the agent does not handle gets its default action there, as it
// did before the guardian existed. And job control: SIGTSTP (Ctrl-Z; Slurm's
// suspend sends it before SIGSTOP) and SIGCONT (fg, bg; Slurm's resume).
constexpr int kForwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGTSTP, SIGCONT};

bool GuardianOff() {
  const char* v = getenv("ELASTIC_NO_GUARDIAN");
  return v != nullptr && *v != '\0' && strcmp(v, "0") != 0;
}

// Runs in the agent right after fork (single-threaded, nothing to undo).
void BecomeAgent(pid_t guardian, const sigset_t& mask) {
  sigprocmask(SIG_SETMASK, &mask, nullptr);  // the agent sets its own signals up
  setpgid(0, 0);  // Ctrl-C's SIGINT to the foreground group: the guardian forwards it once
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) {
    Log(LogLevel::kWarning, "prctl(PR_SET_PDEATHSIG): {}: the agent may outlive its guardian",
        strerror(errno));
  }
  // The guardian may have died before prctl: nothing started yet, stop as on SIGTERM.
  if (getppid() != guardian) _exit(128 + SIGTERM);
}

int StatusOf(const siginfo_t& info) {
  if (info.si_code == CLD_EXITED) return info.si_status;
  return 128 + info.si_status;  // CLD_KILLED, CLD_DUMPED
}

void Forward(int signal_fd, int agent_pidfd) {
  signalfd_siginfo info;
  while (read(signal_fd, &info, sizeof(info)) == sizeof(info)) {
    int sig = static_cast<int>(info.ssi_signo);
    // ESRCH: the agent is exiting; its pidfd reports that next.
    syscall(SYS_pidfd_send_signal, agent_pidfd, sig, nullptr, 0);
    // The agent stops its workers and itself; the guardian stops last, so that a
    // shell sees the job stopped. SIGCONT continues it (whatever its mask) and
    // is then read here and forwarded.
    if (sig == SIGTSTP) raise(SIGSTOP);
  }
}

// Waits for the agent while forwarding signals. False if neither fd could be watched.
bool Supervise(pid_t agent, const sigset_t& forwarded) {
  UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, agent, 0)));
  UniqueFd signal_fd(signalfd(-1, &forwarded, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!pidfd || !signal_fd) {
    Log(LogLevel::kWarning, "guardian: {}: {}: signals are not forwarded to the agent",
        pidfd ? "signalfd" : "pidfd_open", strerror(errno));
    return false;
  }
  pollfd fds[2] = {{pidfd.get(), POLLIN, 0}, {signal_fd.get(), POLLIN, 0}};
  while (true) {
    // No timeout: the agent's run has none; every event wakes us.
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      Log(LogLevel::kWarning, "guardian: poll: {}", strerror(errno));
      return false;
    }
    if (fds[1].revents & POLLIN) Forward(signal_fd.get(), pidfd.get());
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) return true;
  }
}

int ReapAgent(pid_t agent) {
  siginfo_t info{};
  while (waitid(P_PID, agent, &info, WEXITED) != 0) {
    if (errno != EINTR) {
      Log(LogLevel::kError, "guardian: waitid(agent {}): {}", agent, strerror(errno));
      return 1;
    }
  }
  return StatusOf(info);
}

// The agent is gone: its orphans (workers' children, setsid() escapes) are ours now.
// An agent that left because its workers cannot be killed (kExitWorkerStuck) has
// SIGKILLed them already: they are signalled again, never waited for.
void KillLeftovers(int agent_status) {
  if (agent_status == kExitWorkerStuck) {
    int n = SignalDescendants(getpid(), SIGKILL, {});
    if (n > 0) Log(LogLevel::kDebug, "guardian: {} process(es) that cannot be killed left to the kernel", n);
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    return;
  }
  std::string err;
  if (!KillDescendants(getpid(), MonoClock::now() + Millis(AgentSettings{}.guardian_kill_timeout_ms), &err)) {
    Log(LogLevel::kWarning, "guardian: {}", err);
  }
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

}  // namespace

bool RunGuardian(int* exit_status) {
  if (GuardianOff()) return false;
  sigset_t forwarded, original;
  sigemptyset(&forwarded);
  for (int sig : kForwarded) sigaddset(&forwarded, sig);
  // Blocked before fork: a signal from now on waits for the signalfd instead of
  // killing the guardian.
  sigprocmask(SIG_BLOCK, &forwarded, &original);
  // An inherited SIG_IGN would let the kernel reap the agent before we read its status.
  signal(SIGCHLD, SIG_DFL);
  // Before fork: an agent dying at once still hands its orphans to us.
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    Log(LogLevel::kWarning, "guardian: prctl(PR_SET_CHILD_SUBREAPER): {}: running without a guardian",
        strerror(errno));
    sigprocmask(SIG_SETMASK, &original, nullptr);
    return false;
  }
  pid_t guardian = getpid();
  pid_t agent = fork();
  if (agent < 0) {
    Log(LogLevel::kWarning, "guardian: fork: {}: running without a guardian", strerror(errno));
    prctl(PR_SET_CHILD_SUBREAPER, 0);
    sigprocmask(SIG_SETMASK, &original, nullptr);
    return false;
  }
  if (agent == 0) {
    BecomeAgent(guardian, original);
    return false;
  }
  setpgid(agent, agent);  // also here: no window in which a group signal reaches both
  if (!Supervise(agent, forwarded)) {
    // Fallback: signals kill the guardian, PDEATHSIG stops the agent.
    sigprocmask(SIG_SETMASK, &original, nullptr);
  }
  *exit_status = ReapAgent(agent);
  KillLeftovers(*exit_status);
  return true;
}

}  // namespace elastic
