// PyTorch's @record error file (TORCHELASTIC_ERROR_FILE), written by the
// user's worker and read by the agent for the failure summary
// (launcher/failure_report.h). The input is the file's content; the summary
// built from whatever was read must mention the failing rank.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "launcher/failure_report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static int fd = memfd_create("error_file", 0);
  if (fd < 0) std::abort();
  if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) std::abort();
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  elastic::WorkerFailure failure;
  failure.global_rank = 3;
  failure.local_rank = 1;
  failure.host = "n1";
  failure.exit_code = 1;
  if (elastic::ReadErrorFile(path, &failure.message, &failure.traceback)) {
    // Read: the summary carries it.
  }
  std::string summary = elastic::FormatFailureSummary(failure, 1, 3);
  if (summary.find("rank 3") == std::string::npos) std::abort();
  return 0;
}
