// The zygote's replies (launcher/zygote_request.h), read by the agent from the
// preloaded interpreter. Invariants: a parsed reply that carries a pid has one a
// worker can have (> 1); a refusal always says why; a header never admits a
// frame above the limit.
#include <cstdlib>
#include <string>

#include "launcher/zygote_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string err;
  size_t frame = 0;
  if (elastic::ParseFrameHeader(in.substr(0, 4), &frame, &err) && frame > elastic::kMaxZygoteFrame) std::abort();
  elastic::ZygoteReply reply;
  if (elastic::ParseZygoteReply(in, &reply, &err)) {
    bool has_pid = reply.kind == elastic::ZygoteReplyKind::kReady || reply.kind == elastic::ZygoteReplyKind::kSpawned;
    if (has_pid && reply.pid <= 1) std::abort();
    if (!has_pid && reply.reason.empty()) std::abort();
  } else if (err.empty()) {
    std::abort();
  }
  return 0;
}
