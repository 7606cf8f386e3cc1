// /proc/PID/wchan and /proc/PID/stat as the stuck-worker report reads them
// (launcher/stuck_worker.h, launcher/descendants.h). Invariants: a wchan comes back
// printable and bounded; a parsed stat line has a state byte from the text.
#include <cstdlib>
#include <string>

#include "launcher/descendants.h"
#include "launcher/stuck_worker.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string wchan = elastic::ParseWchan(in);
  if (wchan.size() > 100) std::abort();
  for (char c : wchan)
    if (c < 0x20 || c > 0x7e) std::abort();
  elastic::ProcEntry e;
  if (elastic::ParseProcStat(in, &e) && in.find(e.state) == std::string_view::npos) std::abort();
  return 0;
}
