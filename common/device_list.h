// The GPU lists a node is handed, parsed once into a type (one parser for the
// plugin, elasticrun and the binding):
//   SLURM_STEP_GPUS / SLURM_JOB_GPUS (DeviceListKind::kSlurm): global GPU
//     indexes "0,1,3"; ranges "0-3" on some Slurm versions.
//   CUDA_VISIBLE_DEVICES (DeviceListKind::kCuda), as the CUDA runtime reads it:
//     indexes, GPU-<uuid> or MIG-<uuid> entries; a negative index ends the list
//     ("-1" = no GPU); no ranges.
// Both: "NoDevFiles" (Slurm's word for a job without GPU files) and "" mean no
// GPU; empty entries ("0,,1") are skipped; spaces around entries are ignored.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace elastic {

enum class DeviceListKind { kSlurm, kCuda };

struct DeviceEntry {
  enum class Kind { kIndex, kGpuUuid, kMigUuid };
  Kind kind = Kind::kIndex;
  long long index = 0;  // kIndex
  std::string uuid;     // kGpuUuid/kMigUuid: the whole entry ("GPU-8a0f...")
};

struct DeviceList {
  std::vector<DeviceEntry> entries;
  size_t size() const { return entries.size(); }
};

inline constexpr long long kMaxDeviceIndex = 1 << 20;
inline constexpr size_t kMaxDevices = 4096;  // entries of one list (no node has more GPUs)

// Parses `text`, the value of the variable `what` (named in errors, with the
// whole value and the bad entry). At most kMaxDevices entries.
bool ParseDeviceList(DeviceListKind kind, std::string_view what, std::string_view text,
                     DeviceList* out, std::string* err);

// One GPU variable of this node's environment, parsed once: what elasticrun
// counts (--nproc-per-node=gpu) and the binding maps onto the topology
// (hwloc_binding/binding.h BindingRequest). A list that does not parse is an
// error only where it is used.
struct GpuList {
  std::string name;   // "CUDA_VISIBLE_DEVICES", "SLURM_STEP_GPUS", "SLURM_JOB_GPUS"
  std::string text;   // as set: quoted in messages
  bool ok = false;    // parsed; else `error` names the variable and the bad entry
  DeviceList devices;
  std::string error;
};
GpuList ParseGpuList(DeviceListKind kind, const std::string& name, const std::string& text);

}  // namespace elastic
