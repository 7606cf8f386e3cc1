// The status view a rendezvous host answers `elasticrun status` with
// (launcher/job_status.h): whatever a host, or something posing as one before
// the handshake failed, might send. A view that decodes must encode to a view
// that decodes to the same encoding (no field lost or changed).
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <string>

#include "launcher/job_status.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  nlohmann::json view = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  elastic::JobStatus status;
  std::string err;
  if (!elastic::DecodeJobStatus(view, &status, &err)) {
    if (err.empty()) std::abort();  // a refusal says why
    return 0;
  }
  nlohmann::json again = elastic::EncodeJobStatus(status);
  elastic::JobStatus back;
  if (!elastic::DecodeJobStatus(again, &back, &err)) std::abort();
  if (elastic::EncodeJobStatus(back) != again) std::abort();
  return 0;
}
