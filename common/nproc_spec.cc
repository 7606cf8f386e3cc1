#include "common/nproc_spec.h"

#include <fmt/format.h>

#include "common/parse.h"

namespace elastic {

bool ParseNprocSpec(std::string_view what, std::string_view text, NprocSpec* out, std::string* err) {
  using Kind = NprocSpec::Kind;
  long long n = 0;
  if (text == "gpu") {
    *out = NprocSpec{Kind::kGpu, 0};
  } else if (text == "cpu") {
    *out = NprocSpec{Kind::kCpu, 0};
  } else if (text == "auto") {
    *out = NprocSpec{Kind::kAuto, 0};
  } else if (ParseInt(text, 1, kMaxNproc, &n)) {
    *out = NprocSpec{Kind::kCount, static_cast<int>(n)};
  } else {
    if (err) {
      *err = fmt::format("{}: '{}' is not N (1..{}), gpu, cpu or auto", what, text, kMaxNproc);
      // torchrun 2.x also counts xpu and out-of-tree ("privateuse1") accelerators.
      if (text == "xpu" || text == "hpu" || text == "mps" || text == "npu" || text == "mtia")
        *err += " (elasticrun counts NVIDIA and AMD GPUs only: give the number of workers)";
    }
    return false;
  }
  return true;
}

std::string FormatNprocSpec(const NprocSpec& spec) {
  switch (spec.kind) {
    case NprocSpec::Kind::kGpu: return "gpu";
    case NprocSpec::Kind::kCpu: return "cpu";
    case NprocSpec::Kind::kAuto: return "auto";
    case NprocSpec::Kind::kCount: break;
  }
  return std::to_string(spec.count);
}

}  // namespace elastic
