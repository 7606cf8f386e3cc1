// libFuzzer target: the bytes a (fake) rendezvous host can send to an agent,
// through the frame reader, the message decoder and DecodeHostMessage, the only
// way the client reads the host's messages. Whatever decodes must re-encode and
// decode to the same kind (no half-checked struct reaches the client); an end
// reason is always one the agent knows (its name parses back to it).
#include <cstdlib>

#include "fuzz/rdzv_frames.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace elastic;
  ForEachFuzzedMessage(data, size, [](const Message& msg) {
    HostMessage decoded;
    std::string err;
    if (!DecodeHostMessage(msg, &decoded, &err)) {
      if (err.empty()) std::abort();  // a refusal always names what was wrong
      return;
    }
    for (EndReason reason : {decoded.end_reason, decoded.job_failed.end_reason}) {
      EndReason again = EndReason::kError;
      if (!ParseEndReason(EndReasonName(reason), &again) || again != reason) std::abort();
    }
    if (decoded.kind == HostMessage::Kind::kRestart && decoded.restart.restarts_used < -1)
      std::abort();
    if (decoded.kind == HostMessage::Kind::kRound) {
      RoundInfo again;
      if (!RoundFromJson(RoundToJson(decoded.round), &again, &err)) std::abort();
    }
  });
  return 0;
}
