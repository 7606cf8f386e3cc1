// libFuzzer target: the bytes a (fake) rendezvous host can send to an agent,
// through the frame reader, the message decoder and DecodeHostMessage, the only
// way the client reads the host's messages. Whatever decodes must re-encode and
// decode to the same kind (no half-checked struct reaches the client).
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
      HostMessage decoded;
      if (!DecodeHostMessage(msg, &decoded, &err)) {
        if (err.empty()) std::abort();  // a refusal always names what was wrong
        continue;
      }
      if (decoded.kind == HostMessage::Kind::kRound) {
        RoundInfo again;
        if (!RoundFromJson(RoundToJson(decoded.round), &again, &err)) std::abort();
      }
    }
    if (pass == 0) reader.Feed(bytes.substr(half));
  }
  return 0;
}
