// Side programs on the host for an agent in a container image (docs/containers.md,
// "Side programs on the host").
//
// Under pyxis/enroot the agent (the agent bundle) runs in the image's mount
// namespace, where the node's programs and files are not: scontrol and slurm.conf
// (requeue, the live Comment, node state), the site's health check. The SPANK
// plugin therefore starts, in task_init_privileged (on the host, before pyxis
// moves the task; as the job's user), `elasticrun host-runner --fd=N`: the
// HostRunner below, serving one socket whose other end the task inherits
// (ELASTIC_HOST_RUNNER_FD). The agent's HealthCheck (health_check.h) sends such
// programs there through a HostRunnerClient instead of starting them itself.
//
// Contracts (both sides event-driven on an EventLoop; nothing blocks):
// - HostRunner runs each "run" as `/bin/sh -c COMMAND` in its own process group
//   (child_process.h: it dies with the runner), with the request's environment
//   except PATH, LD_LIBRARY_PATH and LD_PRELOAD (the image's), which are the
//   runner's own PATH and nothing; stdout and stderr are the two descriptors
//   that came with the request. Past timeout_ms the group is SIGKILLed and the
//   reply says timed_out. At most kMaxHostRuns at once; more are refused
//   ("error"). Its end: the agent's end closing (or SIGTERM/SIGINT/SIGHUP): every
//   running group is SIGKILLed and reaped, and Run returns.
// - HostRunnerClient::Run calls `done` once, from the loop, never from Run:
//   the runner's verdict, or an error when the runner is gone or does not answer
//   within the timeout plus kHostRunnerGraceMs. Cancel(id): no call afterwards.
// - A message that does not parse is logged and dropped on either side; it never
//   ends the runner or the agent.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "common/unique_fd.h"
#include "launcher/child_process.h"
#include "launcher/host_runner_message.h"

namespace elastic {

constexpr size_t kMaxHostRuns = 16;
constexpr int64_t kHostRunnerGraceMs = 5000;
inline constexpr const char* kHostRunnerFdEnv = "ELASTIC_HOST_RUNNER_FD";
inline constexpr const char* kHostRunnerSocketEnv = "ELASTIC_HOST_RUNNER_SOCKET";
constexpr int kHostRunnerBacklog = 8;

// The environment of a host run: `requested` less PATH, LD_LIBRARY_PATH and
// LD_PRELOAD, plus PATH=host_path.
std::vector<std::string> HostRunEnv(const std::vector<std::string>& requested, const std::string& host_path);

class HostRunner {
 public:
  HostRunner(EventLoop& loop, UniqueFd socket, std::string host_path);
  ~HostRunner();
  HostRunner(const HostRunner&) = delete;
  HostRunner& operator=(const HostRunner&) = delete;

  bool Start(std::string* err);
  // The agent's end closed (or Stop): every run killed; the loop is stopped.
  bool finished() const { return finished_; }
  void Stop(const std::string& why);
  size_t running() const { return runs_.size(); }

 private:
  struct Run {
    ChildHandle child;
    Timer timeout;
    bool timed_out = false;
    bool cancelled = false;
  };
  void OnSocket(uint32_t events);
  void OnRequest(const std::string& payload, std::vector<UniqueFd> fds);
  void StartRun(const HostRequest& request, std::vector<UniqueFd> fds);
  void OnRunExit(uint64_t id);
  void Reply(const HostReply& reply);
  void Flush();

  EventLoop& loop_;
  UniqueFd socket_;
  std::string host_path_;
  std::map<uint64_t, Run> runs_;
  std::vector<std::string> outbox_;
  bool finished_ = false;
};

struct HostRunResult {
  int exit_code = 0;
  int signal = 0;
  bool timed_out = false;
  std::string error;  // not run (or no verdict): why
};

class HostRunnerClient {
 public:
  HostRunnerClient(EventLoop& loop, UniqueFd socket);
  ~HostRunnerClient();
  HostRunnerClient(const HostRunnerClient&) = delete;
  HostRunnerClient& operator=(const HostRunnerClient&) = delete;

  bool Start(std::string* err);
  // False once the runner is gone (its end closed, or a send failed).
  bool alive() const { return alive_; }
  // Sends one run; returns its id (0 and *err when it could not be sent).
  uint64_t Run(const std::string& command, const std::vector<std::string>& env, std::chrono::milliseconds timeout,
               int stdout_fd, int stderr_fd, std::function<void(const HostRunResult&)> done, std::string* err);
  void Cancel(uint64_t id);

 private:
  struct Pending {
    std::function<void(const HostRunResult&)> done;
    Timer deadline;
  };
  void OnSocket(uint32_t events);
  void Finish(uint64_t id, const HostRunResult& result);
  void SendCancel(uint64_t id);
  void Gone(const std::string& why);

  EventLoop& loop_;
  UniqueFd socket_;
  bool alive_ = true;
  uint64_t next_id_ = 1;
  std::map<uint64_t, Pending> pending_;
};

// Slurm's OCI containers (docs/containers.md, "Side programs on the host"): the
// runtime passes the container no descriptor of the task's, but the container
// shares the node's network namespace (host networking), where abstract unix
// sockets live. There the plugin starts the runner with a listening
// SOCK_SEQPACKET socket bound to an abstract name with a random part
// (ELASTIC_HOST_RUNNER_SOCKET=@NAME) and a pidfd of the task's process; the agent
// connects by name. HostRunnerListener accepts on the loop: a peer whose user
// (SO_PEERCRED) is not the runner's is closed with a warning; the first one that
// is becomes the runner's agent (on_agent, once), and the listener closes.
class HostRunnerListener {
 public:
  HostRunnerListener(EventLoop& loop, UniqueFd listener, uid_t uid, std::function<void(UniqueFd)> on_agent);
  ~HostRunnerListener();
  HostRunnerListener(const HostRunnerListener&) = delete;
  HostRunnerListener& operator=(const HostRunnerListener&) = delete;
  bool Start(std::string* err);
  bool accepted() const { return accepted_; }
  size_t refused() const { return refused_; }

 private:
  void OnListener();
  EventLoop& loop_;
  UniqueFd listener_;
  uid_t uid_;
  std::function<void(UniqueFd)> on_agent_;
  bool accepted_ = false;
  size_t refused_ = 0;
};

// "@NAME" (an abstract unix socket name, at most 107 bytes after the '@') into
// *addr and *len; false with *err naming the value otherwise.
bool AbstractSocketAddress(const std::string& at_name, struct sockaddr_un* addr, socklen_t* len, std::string* err);

// The plugin's runner for this agent, from its environment: ELASTIC_HOST_RUNNER_FD=N
// (pyxis: the descriptor, close-on-exec from now on) or ELASTIC_HOST_RUNNER_SOCKET=@NAME
// (OCI: connected now, before the loop: a unix socket's connect does not wait);
// both variables unset so no worker or side program sees them. -1 when neither is
// set, or the descriptor is no socket of this process, or the name cannot be reached
// (a container with a network namespace of its own): *warning says why (unset: empty).
int AdoptHostRunnerFd(std::string* warning);

// `elasticrun host-runner --fd=N`: serves descriptor N until its peer closes.
// `elasticrun host-runner --listen-fd=N --task-pidfd=M`: accepts the agent on the
// listening socket N (HostRunnerListener), then serves it the same way; ends when
// the task's process (pidfd M) ends, whether or not an agent came.
int HostRunnerMain(const std::vector<std::string>& args);

}  // namespace elastic
