// libFuzzer target: the bytes any peer (authenticated or not) can send to the
// rendezvous host, through the frame reader, the message decoder and
// DecodeAgentMessage, the only way the host reads an agent's messages.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "rendezvous/frame.h"
#include "rendezvous/messages.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace elastic;
  FrameReader reader(4096);
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  size_t half = size / 2;
  reader.Feed(bytes.substr(0, half));
  for (int pass = 0; pass < 2; ++pass) {
    std::string payload, err;
    while (reader.Next(&payload, &err) == FrameReader::Result::kFrame) {
      Message msg;
      if (!DecodeMessage(payload, &msg, &err)) continue;
      AgentMessage decoded;
      if (!DecodeAgentMessage(msg, &decoded, &err)) {
        if (err.empty()) std::abort();
        continue;
      }
      if (decoded.kind == AgentMessage::Kind::kJoin &&
          (decoded.local_world_size < 1 || decoded.local_world_size > (1 << 20)))
        std::abort();
      if (decoded.kind == AgentMessage::Kind::kHello &&
          (decoded.hello.name.empty() || decoded.hello.name.size() > 255))
        std::abort();
    }
    if (pass == 0) reader.Feed(bytes.substr(half));
  }
  return 0;
}
