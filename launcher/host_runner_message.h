// The agent <-> host runner protocol (host_runner.h): the side programs of an
// agent that runs in a container image (scontrol, health checks: programs and
// files of the node, not of the image) run on the host, by a runner the SPANK
// plugin started there for the step (docs/containers.md, "Side programs on the
// host").
//
// Transport: a unix SOCK_SEQPACKET socket pair, one message per datagram of at
// most kMaxHostRunnerMessage bytes. A message is NUL-terminated fields: the kind,
// then key, value pairs (a key may repeat: "env").
//
// agent -> runner  "run": id, command (run as `/bin/sh -c COMMAND`), timeout_ms
//                  (> 0), env (KEY=VALUE, repeated). Two descriptors travel with
//                  it (SCM_RIGHTS): the command's stdout, then its stderr (the
//                  agent's files, opened in its own mount namespace).
//                  "cancel": id (the run's process group is SIGKILLed; no reply).
// runner -> agent  "done": id, and exit_code or signal, timed_out (0/1);
//                  "error": id, reason (it could not be started).
//
// Each side encodes its messages and parses the other's here, once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace elastic {

constexpr size_t kMaxHostRunnerMessage = 192 * 1024;  // below a unix socket's default send buffer
constexpr int64_t kMaxHostRunTimeoutMs = 24LL * 3600 * 1000;

enum class HostRequestKind { kRun, kCancel };

struct HostRequest {
  HostRequestKind kind = HostRequestKind::kRun;
  uint64_t id = 0;
  std::string command;            // kRun
  int64_t timeout_ms = 0;         // kRun: 1..kMaxHostRunTimeoutMs
  std::vector<std::string> env;   // kRun: KEY=VALUE
};

enum class HostReplyKind { kDone, kError };

struct HostReply {
  HostReplyKind kind = HostReplyKind::kDone;
  uint64_t id = 0;
  int exit_code = 0;      // kDone, when it exited
  int signal = 0;         // kDone, when a signal ended it (1..64)
  bool timed_out = false; // kDone: killed at its timeout
  std::string reason;     // kError
};

std::string EncodeHostRequest(const HostRequest& request);
bool ParseHostRequest(std::string_view payload, HostRequest* request, std::string* err);
std::string EncodeHostReply(const HostReply& reply);
bool ParseHostReply(std::string_view payload, HostReply* reply, std::string* err);

}  // namespace elastic
