// Topology: an hwloc topology loaded with its I/O devices, owned by RAII, and
// Bitmap, an owned hwloc bitmap. Internal to hwloc_binding (binding.h is the API).
#pragma once

#include <hwloc.h>

#include <string>
#include <utility>

namespace elastic {

// Owned hwloc_bitmap_t. Bits are OS indexes (PU P# in a cpuset, NUMA P# in a nodeset).
class Bitmap {
 public:
  Bitmap() : bitmap_(hwloc_bitmap_alloc()) {}
  explicit Bitmap(hwloc_const_bitmap_t src) : bitmap_(hwloc_bitmap_dup(src)) {}
  Bitmap(const Bitmap& other) : bitmap_(hwloc_bitmap_dup(other.bitmap_)) {}
  Bitmap(Bitmap&& other) noexcept : bitmap_(std::exchange(other.bitmap_, nullptr)) {}
  Bitmap& operator=(Bitmap other) noexcept {
    std::swap(bitmap_, other.bitmap_);
    return *this;
  }
  ~Bitmap() {
    if (bitmap_) hwloc_bitmap_free(bitmap_);
  }

  hwloc_bitmap_t get() { return bitmap_; }
  hwloc_const_bitmap_t get() const { return bitmap_; }
  bool empty() const { return hwloc_bitmap_iszero(bitmap_); }
  int weight() const { return hwloc_bitmap_weight(bitmap_); }
  bool operator==(const Bitmap& other) const { return hwloc_bitmap_isequal(bitmap_, other.bitmap_); }

  // "0-23,48-71"; "" when empty.
  std::string List() const;
  // Parses a list string ("0-3,8", "5"); rejects junk, empty and infinite ("4-") sets.
  // `what` names the value in the error ("--cpus-allowed").
  static bool ParseList(const std::string& what, const std::string& text, Bitmap* out,
                        std::string* err);

 private:
  hwloc_bitmap_t bitmap_;
};

// Where a topology comes from: this machine, or an XML file.
class Topology {
 public:
  Topology() = default;
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;
  ~Topology() {
    if (topology_) hwloc_topology_destroy(topology_);
  }

  // Loads `xml_file`, or this machine when it is empty, keeping the important
  // I/O devices (PCI display/3D/accelerator classes and OS devices): hwloc's
  // library default drops all I/O, even from XML. On this machine, I/O
  // discovery is skipped when sysfs shows no NVIDIA/AMD GPU (it only serves to
  // find GPUs, and costs tens of ms in VMs). hwloc's plugins (OpenCL, GL,
  // libxml2, libpciaccess) are not loaded: see topology.cc. Errors name the file.
  bool Load(const std::string& xml_file, std::string* err);

  hwloc_topology_t get() const { return topology_; }
  // False for another machine's XML: hwloc's binding calls are then no-ops.
  bool this_system() const { return hwloc_topology_is_thissystem(topology_) != 0; }
  const std::string& source() const { return source_; }  // file name or "this machine"
  hwloc_obj_t root() const { return hwloc_get_root_obj(topology_); }

 private:
  hwloc_topology_t topology_ = nullptr;
  std::string source_;
};

// The XML file a request means: `topology_file`, else $HWLOC_XMLFILE, else "".
std::string ResolveTopologyFile(const std::string& topology_file);

}  // namespace elastic
