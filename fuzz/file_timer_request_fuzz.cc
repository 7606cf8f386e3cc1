// PyTorch's FileTimerClient requests (launcher/file_timer_request.h): lines
// any process of the user may write to the agent's named pipe. Each input is a
// stream of lines; every accepted request must satisfy the parser's contract,
// and the timer table they feed stays within its bound.
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "fuzz/fuzz_input.h"
#include "launcher/file_timer_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  elastic::fuzz::FuzzInput in(data, size);
  elastic::TimerTable table(8);
  for (const std::string& line : in.Lines()) {
    elastic::FileTimerRequest r;
    std::string err;
    if (!elastic::ParseFileTimerRequest(line, &r, &err)) {
      if (err.empty()) std::abort();
      continue;
    }
    if (r.pid <= 0 || !std::isfinite(r.expiration_time) || r.signal < -64 || r.signal > 64) std::abort();
    table.Apply(r);
    if (table.size() > 8) std::abort();
    for (const elastic::ExpiredTimer& e : table.TakeExpired(r.expiration_time / 2)) {
      if (e.pid <= 0) std::abort();
    }
  }
  return 0;
}
