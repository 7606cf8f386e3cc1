// The agent <-> host runner messages (launcher/host_runner_message.h), both
// directions. Invariants: a parsed request has an id and, to run, a command and a
// deadline within the limit; a parsed reply has an id, and an error says why; what
// parses encodes back to something that parses to the same.
#include <cstdlib>
#include <string>

#include "launcher/host_runner_message.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string err;
  elastic::HostRequest request;
  if (elastic::ParseHostRequest(in, &request, &err)) {
    if (request.id == 0) std::abort();
    if (request.kind == elastic::HostRequestKind::kRun &&
        (request.command.empty() || request.timeout_ms <= 0 || request.timeout_ms > elastic::kMaxHostRunTimeoutMs))
      std::abort();
    elastic::HostRequest again;
    if (!elastic::ParseHostRequest(elastic::EncodeHostRequest(request), &again, &err)) std::abort();
    if (again.id != request.id || again.command != request.command || again.env != request.env) std::abort();
  } else if (err.empty()) {
    std::abort();
  }
  err.clear();
  elastic::HostReply reply;
  if (elastic::ParseHostReply(in, &reply, &err)) {
    if (reply.id == 0) std::abort();
    if (reply.kind == elastic::HostReplyKind::kError && reply.reason.empty()) std::abort();
    elastic::HostReply again;
    if (!elastic::ParseHostReply(elastic::EncodeHostReply(reply), &again, &err)) std::abort();
    if (again.id != reply.id || again.exit_code != reply.exit_code || again.signal != reply.signal) std::abort();
  } else if (err.empty()) {
    std::abort();
  }
  return 0;
}
