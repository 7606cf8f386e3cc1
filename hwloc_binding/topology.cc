#include "hwloc_binding/topology.h"

#include "common/parse.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

namespace elastic {
namespace {

// hwloc dlopens every plugin when the first topology is created and closes them
// when the last is destroyed: libxml2, libpciaccess, the OpenCL ICD loader and
// libGL/X11 cost ~20 ms per load here, and discovery through the OpenCL plugin
// would initialise the GPU driver on a real node. We read GPUs as PCI devices
// only, so none is needed: the built-in Linux backend finds PCI devices in
// sysfs and the built-in XML parser reads hwloc's exports (v1 and v2).
// HWLOC_PLUGINS_BLACKLIST is read when the plugins are loaded; it is set only
// around that, and never when the user set it, so workers do not inherit it.
constexpr char kPluginBlacklist[] = "hwloc_gl,hwloc_opencl,hwloc_xml_libxml,hwloc_pci";

class PluginBlacklist {
 public:
  PluginBlacklist() : set_(std::getenv("HWLOC_PLUGINS_BLACKLIST") == nullptr) {
    if (set_) setenv("HWLOC_PLUGINS_BLACKLIST", kPluginBlacklist, 1);
  }
  ~PluginBlacklist() {
    if (set_) unsetenv("HWLOC_PLUGINS_BLACKLIST");
  }
  PluginBlacklist(const PluginBlacklist&) = delete;
  PluginBlacklist& operator=(const PluginBlacklist&) = delete;

 private:
  bool set_;
};

std::optional<unsigned> ReadHex(const std::filesystem::path& path) {
  std::ifstream in(path);
  unsigned value = 0;
  if (!(in >> std::hex >> value)) return std::nullopt;
  return value;
}

// Whether this machine may have an NVIDIA or AMD GPU, from sysfs text files.
// hwloc's PCI discovery reads every device's config space, which some virtual
// machines emulate slowly (~3 ms per read here): skip it when no GPU exists.
// Anything unreadable answers "maybe".
bool MayHaveGpu() {
  if (std::getenv("HWLOC_FSROOT")) return true;
  std::error_code ec;
  std::filesystem::directory_iterator devices("/sys/bus/pci/devices", ec);
  if (ec) return true;
  for (const auto& device : devices) {
    std::optional<unsigned> vendor = ReadHex(device.path() / "vendor");
    std::optional<unsigned> pci_class = ReadHex(device.path() / "class");
    if (!vendor || !pci_class) return true;
    unsigned base_class = *pci_class >> 16;
    if ((*vendor == 0x10de || *vendor == 0x1002) && (base_class == 0x03 || base_class == 0x12)) return true;
  }
  return false;
}

}  // namespace

std::string Bitmap::List() const {
  char* text = nullptr;
  if (hwloc_bitmap_list_asprintf(&text, bitmap_) < 0 || text == nullptr) return "";
  std::string result(text);
  std::free(text);
  return result;
}

bool Bitmap::ParseList(const std::string& what, const std::string& text, Bitmap* out,
                       std::string* err) {
  // Parsed here, not by hwloc_bitmap_list_sscanf: hwloc reads "010" as octal (CPU 8)
  // and allocates for any index, so a typo like 4000000000 would eat memory.
  constexpr long long kMaxIndex = 65535;
  Bitmap parsed;
  bool valid = !text.empty();
  for (const std::string& item : Split(text, ',')) {
    if (!valid) break;
    size_t dash = item.find('-');
    long long lo = 0, hi = 0;
    if (dash == std::string::npos) {
      valid = ParseInt(item, 0, kMaxIndex, &lo);
      hi = lo;
    } else {
      valid = ParseInt(std::string_view(item).substr(0, dash), 0, kMaxIndex, &lo) &&
              ParseInt(std::string_view(item).substr(dash + 1), 0, kMaxIndex, &hi) && lo <= hi;
    }
    if (valid) hwloc_bitmap_set_range(parsed.get(), static_cast<unsigned>(lo), static_cast<int>(hi));
  }
  if (!valid) {
    *err = fmt::format("{}: '{}' is not a list of OS indexes like '0-3,8' (each at most {})", what, text,
                       kMaxIndex);
    return false;
  }
  *out = std::move(parsed);
  return true;
}

std::string ResolveTopologyFile(const std::string& topology_file) {
  if (!topology_file.empty()) return topology_file;
  const char* env = std::getenv("HWLOC_XMLFILE");
  return env ? env : "";
}

bool Topology::Load(const std::string& xml_file, std::string* err) {
  source_ = xml_file.empty() ? "this machine" : xml_file;
  if (topology_) {
    hwloc_topology_destroy(topology_);
    topology_ = nullptr;
  }
  if (!xml_file.empty()) {
    // hwloc's own message for a missing file is vague; check it first.
    FILE* probe = std::fopen(xml_file.c_str(), "r");
    if (!probe) {
      *err = fmt::format("topology file {}: {}", xml_file, std::strerror(errno));
      return false;
    }
    std::fclose(probe);
  }
  PluginBlacklist blacklist;
  if (hwloc_topology_init(&topology_) != 0) {
    topology_ = nullptr;
    *err = fmt::format("hwloc_topology_init: {}", std::strerror(errno));
    return false;
  }
  bool want_io = !xml_file.empty() || MayHaveGpu();
  hwloc_topology_set_io_types_filter(topology_, want_io ? HWLOC_TYPE_FILTER_KEEP_IMPORTANT
                                                        : HWLOC_TYPE_FILTER_KEEP_NONE);
  if (!xml_file.empty() && hwloc_topology_set_xml(topology_, xml_file.c_str()) != 0) {
    *err = fmt::format("topology file {}: not a readable hwloc XML file", xml_file);
    return false;
  }
  if (hwloc_topology_load(topology_) != 0) {
    *err = xml_file.empty()
               ? fmt::format("cannot discover this machine's topology: {}", std::strerror(errno))
               : fmt::format("topology file {}: not a valid hwloc XML topology (hwloc 2.x reads "
                             "v1 and v2 exports; export hwloc 3 files with --of v2xml)",
                             xml_file);
    hwloc_topology_destroy(topology_);
    topology_ = nullptr;
    return false;
  }
  return true;
}

}  // namespace elastic
