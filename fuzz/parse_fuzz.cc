// common/parse.h: every helper that reads option and environment values.
// Invariants checked: a successful ParseInt is in range and its canonical
// spelling parses back; a
// failure always explains itself; ParseKeyValues never yields an empty key.
#include <cstdlib>
#include <string>

#include "common/parse.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  elastic::fuzz::FuzzInput in(data, size);
  unsigned char which = in.Selector();
  std::string_view text = in.Rest();
  std::string err;
  switch (which % 4) {
    case 0: {
      long long value = 0;
      if (elastic::ParseIntNamed("--x", text, -1000, 1000000, &value, &err)) {
        // In range, and its canonical spelling parses back to the same value
        // (leading zeros are accepted: "007" is 7).
        long long again = 0;
        if (value < -1000 || value > 1000000) std::abort();
        if (!elastic::ParseInt(std::to_string(value), -1000, 1000000, &again) || again != value) {
          std::abort();
        }
      } else if (err.empty()) {
        std::abort();
      }
      break;
    }
    case 1: {
      long long millis = -1;
      if (elastic::ParseSeconds("--shutdown-timeout", text, &millis, &err)) {
        if (millis < 0) std::abort();
      } else if (err.empty()) {
        std::abort();
      }
      break;
    }
    case 2: {
      std::vector<std::pair<std::string, std::string>> kv;
      if (elastic::ParseKeyValues("--rdzv-conf", text, &kv, &err)) {
        for (const auto& [k, v] : kv) {
          if (k.empty()) std::abort();
        }
      } else if (err.empty()) {
        std::abort();
      }
      break;
    }
    default: {
      // Split keeps empty fields: N separators give N + 1 fields.
      size_t seps = 0;
      for (char c : text) seps += c == ',';
      if (elastic::Split(text, ',').size() != seps + 1) std::abort();
      break;
    }
  }
  return 0;
}
