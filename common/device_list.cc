#include "common/device_list.h"

#include <fmt/format.h>

#include "common/parse.h"

namespace elastic {
namespace {

std::string_view TrimView(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// "A" or "A-B" (A <= B), each 0..kMaxDeviceIndex.
bool ParseRange(std::string_view entry, bool ranges, long long* first, long long* last) {
  size_t dash = ranges ? entry.find('-', 1) : std::string_view::npos;
  if (dash == std::string_view::npos) {
    if (!ParseInt(entry, 0, kMaxDeviceIndex, first)) return false;
    *last = *first;
    return true;
  }
  return ParseInt(entry.substr(0, dash), 0, kMaxDeviceIndex, first) &&
         ParseInt(entry.substr(dash + 1), 0, kMaxDeviceIndex, last) && *first <= *last;
}

}  // namespace

bool ParseDeviceList(DeviceListKind kind, std::string_view what, std::string_view text,
                     DeviceList* out, std::string* err) {
  out->entries.clear();
  if (TrimView(text) == "NoDevFiles") return true;
  const bool cuda = kind == DeviceListKind::kCuda;
  for (const std::string& raw : Split(text, ',')) {
    std::string_view entry = TrimView(raw);
    if (entry.empty()) continue;
    if (cuda && (StartsWith(entry, "GPU-") || StartsWith(entry, "MIG-"))) {
      if (out->entries.size() >= kMaxDevices) {
        *err = fmt::format("{}='{}': more than {} GPUs", what, text, kMaxDevices);
        return false;
      }
      DeviceEntry e;
      e.kind = StartsWith(entry, "GPU-") ? DeviceEntry::Kind::kGpuUuid : DeviceEntry::Kind::kMigUuid;
      e.uuid = std::string(entry);
      out->entries.push_back(std::move(e));
      continue;
    }
    long long negative = 0;
    if (cuda && entry[0] == '-' && ParseInt(entry.substr(1), 0, kMaxDeviceIndex, &negative)) {
      break;  // CUDA ignores everything from a negative index on
    }
    long long first = 0, last = 0;
    if (!ParseRange(entry, !cuda, &first, &last)) {
      *err = fmt::format("{}='{}': '{}' is not a GPU index{}", what, text, entry,
                         cuda ? " nor a GPU-<uuid>" : " or range (A-B)");
      return false;
    }
    if (out->entries.size() + static_cast<size_t>(last - first + 1) > kMaxDevices) {
      *err = fmt::format("{}='{}': more than {} GPUs", what, text, kMaxDevices);
      return false;
    }
    for (long long i = first; i <= last; ++i) out->entries.push_back(DeviceEntry{DeviceEntry::Kind::kIndex, i, {}});
  }
  return true;
}

GpuList ParseGpuList(DeviceListKind kind, const std::string& name, const std::string& text) {
  GpuList list;
  list.name = name;
  list.text = text;
  list.ok = ParseDeviceList(kind, name, text, &list.devices, &list.error);
  return list;
}

}  // namespace elastic
