// libFuzzer target: the bytes a peer can send to the rendezvous host, through
// the frame reader and the message decoder and field parsers. Built with
// -DELASTIC_FUZZ=ON (clang); a short run is a test, longer runs bench/rendezvous/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "rendezvous/frame.h"
#include "rendezvous/messages.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace elastic;
  FrameReader reader(4096);
  // Split the input in two feeds to exercise partial frames.
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  size_t half = size / 2;
  reader.Feed(bytes.substr(0, half));
  for (int pass = 0; pass < 2; ++pass) {
    std::string payload, err;
    while (reader.Next(&payload, &err) == FrameReader::Result::kFrame) {
      Message msg;
      if (!DecodeMessage(payload, &msg, &err)) continue;
      RoundInfo round;
      WorkerFailure failure;
      RoundFromJson(msg.body, &round, &err);
      if (msg.body.contains("failure")) FailureFromJson(msg.body["failure"], &failure, &err);
      int64_t value = 0;
      GetInt(msg.body, "local_world_size", &value, &err);
    }
    if (pass == 0) reader.Feed(bytes.substr(half));
  }
  return 0;
}
