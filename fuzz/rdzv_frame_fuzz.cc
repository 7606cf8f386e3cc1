// libFuzzer target: the bytes a peer can send to the rendezvous host, through
// the frame reader and the message decoder and field parsers. Built with
// -DELASTIC_FUZZ=ON (clang); a short run is a test, longer runs bench/rendezvous/fuzz.sh.
#include <cstdint>
#include <string>

#include "fuzz/rdzv_frames.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace elastic;
  // The input arrives in two feeds to exercise partial frames.
  ForEachFuzzedMessage(data, size, [](const Message& msg) {
    std::string err;
    RoundInfo round;
    WorkerFailure failure;
    RoundFromJson(msg.body, &round, &err);
    if (msg.body.contains("failure")) FailureFromJson(msg.body["failure"], &failure, &err);
    int64_t value = 0;
    GetInt(msg.body, "local_world_size", &value, &err);
  });
  return 0;
}
