// --nproc-per-node / --elastic-nproc-per-node / PET_NPROC_PER_NODE: how many
// workers a node starts, parsed once into a type:
//   N     1..kMaxNproc workers
//   gpu   one per GPU this node may use (an error where there is none)
//   cpu   one per CPU this process may run on
//   auto  gpu when the node has GPUs, else cpu
// The launcher resolves gpu/cpu/auto on the node (launcher/worker_command.h);
// the plugin only checks and forwards the text.
#pragma once

#include <string>
#include <string_view>

namespace elastic {

inline constexpr int kMaxNproc = 4096;

struct NprocSpec {
  enum class Kind { kCount, kGpu, kCpu, kAuto };
  Kind kind = Kind::kCount;
  int count = 1;  // kCount only

  bool operator==(const NprocSpec&) const = default;
};

// Parses `text`, the value of `what` (named in the error with the value).
bool ParseNprocSpec(std::string_view what, std::string_view text, NprocSpec* out, std::string* err);

// "4", "gpu", "cpu", "auto": the text ParseNprocSpec reads back.
std::string FormatNprocSpec(const NprocSpec& spec);

}  // namespace elastic
