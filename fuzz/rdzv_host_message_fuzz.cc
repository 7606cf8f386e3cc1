// libFuzzer target: the bytes any peer (authenticated or not) can send to the
// rendezvous host, through the frame reader, the message decoder and
// DecodeAgentMessage, the only way the host reads an agent's messages.
#include <cstdlib>

#include "fuzz/rdzv_frames.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace elastic;
  ForEachFuzzedMessage(data, size, [](const Message& msg) {
    AgentMessage decoded;
    std::string err;
    if (!DecodeAgentMessage(msg, &decoded, &err)) {
      if (err.empty()) std::abort();
      return;
    }
    if (decoded.kind == AgentMessage::Kind::kJoin &&
        (decoded.local_world_size < 1 || decoded.local_world_size > (1 << 20)))
      std::abort();
    if (decoded.kind == AgentMessage::Kind::kHello &&
        (decoded.hello.name.empty() || decoded.hello.name.size() > 255))
      std::abort();
  });
  return 0;
}
