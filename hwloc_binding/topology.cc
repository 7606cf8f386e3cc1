#include "hwloc_binding/topology.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace elastic {

std::string Bitmap::List() const {
  char* text = nullptr;
  if (hwloc_bitmap_list_asprintf(&text, bitmap_) < 0 || text == nullptr) return "";
  std::string result(text);
  std::free(text);
  return result;
}

bool Bitmap::ParseList(const std::string& what, const std::string& text, Bitmap* out,
                       std::string* err) {
  // hwloc's parser accepts trailing junk and infinite ranges; be strict first.
  bool valid = !text.empty() && text.find_first_not_of("0123456789,-") == std::string::npos &&
               text.back() != '-' && text.back() != ',' && text.front() != '-' &&
               text.front() != ',' && text.find(",,") == std::string::npos &&
               text.find("--") == std::string::npos && text.find(",-") == std::string::npos &&
               text.find("-,") == std::string::npos;
  Bitmap parsed;
  if (valid) valid = hwloc_bitmap_list_sscanf(parsed.get(), text.c_str()) == 0;
  if (valid) valid = !parsed.empty() && hwloc_bitmap_last(parsed.get()) >= 0;
  if (!valid) {
    *err = fmt::format("{}: '{}' is not a list of OS indexes like '0-3,8'", what, text);
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
  if (hwloc_topology_init(&topology_) != 0) {
    topology_ = nullptr;
    *err = fmt::format("hwloc_topology_init: {}", std::strerror(errno));
    return false;
  }
  hwloc_topology_set_io_types_filter(topology_, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
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
