// The agent <-> host rendezvous protocol as a host or an agent receives it from
// the network (rendezvous/frame.h, rendezvous/messages.h): frames fed in
// arbitrary pieces, each payload decoded, and the typed readers applied to
// whatever object came out. The first byte picks the chunk size (how the bytes
// arrive), the rest is the byte stream. Invariants: a frame never exceeds the
// limit; after an error the reader stays failed; decoded messages have a type;
// a round read back re-encodes to itself.
#include <cstdlib>
#include <string>

#include "fuzz/fuzz_input.h"
#include "rendezvous/frame.h"
#include "rendezvous/messages.h"

using namespace elastic;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::FuzzInput in(data, size);
  size_t chunk = 1 + in.Selector() % 64;
  std::string_view bytes = in.Rest();
  constexpr uint32_t kMax = 4096;
  FrameReader reader(kMax);
  bool failed = false;
  for (size_t pos = 0; pos < bytes.size(); pos += chunk) {
    reader.Feed(bytes.substr(pos, chunk));
    while (true) {
      std::string payload, err;
      FrameReader::Result r = reader.Next(&payload, &err);
      if (r == FrameReader::Result::kNeedMore) break;
      if (r == FrameReader::Result::kError) {
        if (err.empty()) std::abort();
        failed = true;
        break;
      }
      if (failed || payload.size() > kMax) std::abort();
      Message msg;
      if (!DecodeMessage(payload, &msg, &err)) {
        if (err.empty()) std::abort();
        continue;
      }
      if (msg.type.empty() && !msg.body.contains("type")) std::abort();
      std::string s;
      int64_t i = 0;
      GetString(msg.body, "run_id", &s, &err);
      GetInt(msg.body, "round", &i, &err);
      RoundInfo round;
      if (RoundFromJson(msg.body, &round, &err)) {
        RoundInfo again;
        if (!RoundFromJson(RoundToJson(round), &again, &err) || again.round != round.round ||
            again.world_size != round.world_size || again.store_addr != round.store_addr) {
          std::abort();
        }
      }
      if (msg.body.contains("failure")) {
        WorkerFailure f;
        FailureFromJson(msg.body["failure"], &f, &err);
      }
    }
    if (failed) {
      // Sticky: more bytes never bring the reader back.
      std::string payload, err;
      reader.Feed("\x00\x00\x00\x02{}");
      if (reader.Next(&payload, &err) != FrameReader::Result::kError) std::abort();
      break;
    }
  }
  return 0;
}
