// The one GPU-list parser (common/device_list.h), both kinds. Invariants: it
// never crashes or allocates past kMaxDevices entries; an accepted Slurm list
// holds only indexes in range; an accepted CUDA list printed back as indexes
// and UUIDs parses to the same entries (Slurm lists too); an error names the
// variable.
#include <cstdlib>
#include <string>

#include "common/device_list.h"
#include "fuzz/fuzz_input.h"

using namespace elastic;

namespace {

std::string Print(const DeviceList& list) {
  std::string s;
  for (const DeviceEntry& e : list.entries) {
    if (!s.empty()) s += ",";
    s += e.kind == DeviceEntry::Kind::kIndex ? std::to_string(e.index) : e.uuid;
  }
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  for (DeviceListKind kind : {DeviceListKind::kSlurm, DeviceListKind::kCuda}) {
    DeviceList list;
    std::string err;
    if (!ParseDeviceList(kind, "VAR", text, &list, &err)) {
      if (err.rfind("VAR='", 0) != 0) std::abort();
      continue;
    }
    if (list.size() > kMaxDevices) std::abort();
    for (const DeviceEntry& e : list.entries) {
      if (e.kind == DeviceEntry::Kind::kIndex && (e.index < 0 || e.index > kMaxDeviceIndex)) std::abort();
      if (kind == DeviceListKind::kSlurm && e.kind != DeviceEntry::Kind::kIndex) std::abort();
    }
    // Printed back (entries joined by ","), it parses to the same entries.
    DeviceList again;
    std::string printed = Print(list);
    if (!ParseDeviceList(kind, "VAR", printed, &again, &err) || Print(again) != printed) std::abort();
  }
  return 0;
}
