// A line of the job's event record (launcher/job_events.h), as `elasticrun
// timeline` reads it: any file a user points it at. A line that decodes must
// encode to a line that decodes to the same encoding (no field lost or changed).
#include <cstdlib>
#include <string>

#include "launcher/job_events.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string line(reinterpret_cast<const char*>(data), size);
  elastic::JobEvent event;
  std::string err;
  if (!elastic::DecodeJobEvent(line, &event, &err)) {
    if (err.empty()) std::abort();  // a refusal says why
    return 0;
  }
  std::string again = elastic::EncodeJobEvent(event);
  elastic::JobEvent back;
  if (!elastic::DecodeJobEvent(again, &back, &err)) std::abort();
  if (elastic::EncodeJobEvent(back) != again) std::abort();
  return 0;
}
