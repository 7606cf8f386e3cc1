#include "hwloc_binding/gpus.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "common/device_list.h"
#include "common/parse.h"

namespace elastic {
namespace {

bool IsGpuPciDevice(const hwloc_obj_attr_u::hwloc_pcidev_attr_s& pci) {
  unsigned base_class = pci.class_id >> 8;
  bool gpu_class = base_class == 0x03 || base_class == 0x12;  // display/3D, accelerator
  return gpu_class && (pci.vendor_id == kVendorNvidia || pci.vendor_id == kVendorAmd);
}

std::string BusId(const hwloc_obj_attr_u::hwloc_pcidev_attr_s& pci) {
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", pci.domain, pci.bus, pci.dev, pci.func);
}

auto BusKey(const Gpu& gpu) {
  const auto& pci = gpu.pci->attr->pcidev;
  return std::make_tuple(pci.domain, pci.bus, pci.dev, pci.func);
}

std::string VendorName(unsigned vendor) { return vendor == kVendorAmd ? "AMD" : "NVIDIA"; }

// The NVIDIA UUIDs hwloc's NVML backend recorded on the GPU's OS devices.
std::vector<std::string> UuidsOf(const Gpu& gpu) {
  std::vector<std::string> uuids;
  for (hwloc_obj_t child = gpu.pci->io_first_child; child; child = child->next_sibling) {
    if (const char* uuid = hwloc_obj_get_info_by_name(child, "NVIDIAUUID")) uuids.push_back(uuid);
  }
  return uuids;
}

// CUDA accepts any unique prefix of "GPU-<uuid>".
bool FindByUuid(const std::string& entry, const std::vector<Gpu>& gpus, size_t* index,
                std::string* err) {
  std::vector<size_t> matches;
  for (size_t i = 0; i < gpus.size(); ++i) {
    for (const std::string& uuid : UuidsOf(gpus[i])) {
      if (uuid.compare(0, entry.size(), entry) == 0) {
        matches.push_back(i);
        break;
      }
    }
  }
  if (matches.size() == 1) {
    *index = matches[0];
    return true;
  }
  if (matches.empty()) {
    *err = fmt::format(
        "CUDA_VISIBLE_DEVICES entry '{}' matches no GPU UUID known to the topology (Debian's "
        "hwloc has no NVML backend to record UUIDs); set CUDA_VISIBLE_DEVICES to integer "
        "indexes in PCI bus id order, or unset it and rely on SLURM_STEP_GPUS",
        entry);
  } else {
    *err = fmt::format("CUDA_VISIBLE_DEVICES entry '{}' matches {} GPUs; give more of the UUID",
                       entry, matches.size());
  }
  return false;
}

struct CudaEntry {
  bool is_index = true;
  long long index = 0;   // when is_index
  size_t gpu = 0;        // when matched by UUID
};

// CUDA_VISIBLE_DEVICES' entries (parsed: common/device_list.h), UUIDs matched
// against the topology's GPUs; MIG instances are refused.
bool CudaEntries(const DeviceList& list, const std::vector<Gpu>& gpus,
                 std::vector<CudaEntry>* out, std::string* err) {
  for (const DeviceEntry& e : list.entries) {
    CudaEntry parsed;
    if (e.kind == DeviceEntry::Kind::kMigUuid) {
      *err = fmt::format(
          "CUDA_VISIBLE_DEVICES entry '{}' is a MIG instance; binding needs whole GPUs "
          "(use --bind numa or none with MIG)",
          e.uuid);
      return false;
    }
    if (e.kind == DeviceEntry::Kind::kGpuUuid) {
      parsed.is_index = false;
      if (!FindByUuid(e.uuid, gpus, &parsed.gpu, err)) return false;
    } else {
      parsed.index = e.index;
    }
    out->push_back(parsed);
  }
  return true;
}

// Set and not "" (an empty variable means what an unset one does).
const GpuList* Given(const GpuList* list) { return list && !list->text.empty() ? list : nullptr; }

std::string Quoted(const GpuList& list) { return list.name + "=" + list.text; }

bool IndexToGpu(const std::string& what, long long index, const std::vector<Gpu>& gpus,
                size_t* out, std::string* err) {
  if (index < 0 || static_cast<size_t>(index) >= gpus.size()) {
    std::string vendor = gpus.empty() ? "" : VendorName(gpus[0].vendor) + " ";
    *err = fmt::format("{}: GPU index {}, but this node has {} {}GPU(s) (indexes follow PCI bus id order)",
                       what, index, gpus.size(), vendor);
    return false;
  }
  *out = static_cast<size_t>(index);
  return true;
}

}  // namespace

std::vector<Gpu> FindGpus(const Topology& topology) {
  std::vector<Gpu> gpus;
  std::set<std::string> seen;
  for (hwloc_obj_t obj = hwloc_get_next_pcidev(topology.get(), nullptr); obj;
       obj = hwloc_get_next_pcidev(topology.get(), obj)) {
    const auto& pci = obj->attr->pcidev;
    if (!IsGpuPciDevice(pci)) continue;
    Gpu gpu{BusId(pci), pci.vendor_id, obj};
    if (seen.insert(gpu.busid).second) gpus.push_back(std::move(gpu));
  }
  std::sort(gpus.begin(), gpus.end(), [](const Gpu& a, const Gpu& b) { return BusKey(a) < BusKey(b); });
  return gpus;
}

bool SelectVendor(const std::string& vendor, std::vector<Gpu>* gpus, std::string* err) {
  unsigned wanted = 0;
  if (vendor == "nvidia") {
    wanted = kVendorNvidia;
  } else if (vendor == "amd") {
    wanted = kVendorAmd;
  } else if (vendor.empty()) {
    bool any_nvidia = std::any_of(gpus->begin(), gpus->end(),
                                  [](const Gpu& gpu) { return gpu.vendor == kVendorNvidia; });
    wanted = any_nvidia ? kVendorNvidia : kVendorAmd;
  } else {
    *err = fmt::format("--gpu-vendor: '{}' is not one of nvidia, amd", vendor);
    return false;
  }
  std::erase_if(*gpus, [wanted](const Gpu& gpu) { return gpu.vendor != wanted; });
  return true;
}

const GpuList* VisibleGpuList(const GpuList* cuda_visible_devices, const GpuList* slurm_step_gpus) {
  if (const GpuList* cvd = Given(cuda_visible_devices)) return cvd;
  return Given(slurm_step_gpus);
}

bool SelectVisibleGpus(const GpuList* cuda_visible_devices, const GpuList* slurm_step_gpus,
                       std::vector<Gpu>* gpus, std::string* err) {
  const GpuList* cvd = Given(cuda_visible_devices);
  const GpuList* slurm = Given(slurm_step_gpus);
  std::vector<long long> step;
  if (slurm) {
    if (!slurm->ok) return *err = slurm->error, false;
    for (const DeviceEntry& e : slurm->devices.entries) step.push_back(e.index);
  }
  std::vector<size_t> chosen;
  if (cvd) {
    if (!cvd->ok) return *err = cvd->error, false;
    std::vector<CudaEntry> entries;
    if (!CudaEntries(cvd->devices, *gpus, &entries, err)) return false;
    // ConstrainDevices renumbers CUDA_VISIBLE_DEVICES from 0 within the step's GPUs.
    std::set<long long> step_set(step.begin(), step.end());
    bool relative = !step.empty() && std::any_of(entries.begin(), entries.end(), [&](const CudaEntry& e) {
                      return e.is_index && step_set.count(e.index) == 0;
                    });
    std::vector<long long> step_sorted(step_set.begin(), step_set.end());
    for (const CudaEntry& entry : entries) {
      size_t gpu = entry.gpu;
      if (entry.is_index) {
        long long index = entry.index;
        if (relative) {
          if (static_cast<size_t>(index) >= step_sorted.size()) {
            *err = fmt::format(
                "CUDA_VISIBLE_DEVICES='{}' names GPU {}, which is neither one of "
                "{}='{}' nor an index into them",
                cvd->text, index, slurm->name, slurm->text);
            return false;
          }
          index = step_sorted[static_cast<size_t>(index)];
        }
        if (!IndexToGpu(Quoted(*cvd), index, *gpus, &gpu, err)) return false;
      }
      chosen.push_back(gpu);
    }
  } else if (slurm) {
    for (long long index : step) {
      size_t gpu = 0;
      if (!IndexToGpu(Quoted(*slurm), index, *gpus, &gpu, err)) return false;
      chosen.push_back(gpu);
    }
  } else {
    return true;  // all GPUs, in bus id order
  }
  std::set<size_t> unique(chosen.begin(), chosen.end());
  if (unique.size() != chosen.size()) {
    *err = fmt::format("{} lists the same GPU twice", Quoted(cvd ? *cvd : *slurm));
    return false;
  }
  std::vector<Gpu> visible;
  for (size_t index : chosen) visible.push_back((*gpus)[index]);
  *gpus = std::move(visible);
  return true;
}

}  // namespace elastic
