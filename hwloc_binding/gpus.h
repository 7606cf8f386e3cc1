// GPUs as PCI devices, and the node's visible GPUs. Internal to hwloc_binding.
//
// Why PCI devices and not OS devices: Debian's hwloc has no CUDA/NVML backend,
// and where OS devices exist one GPU shows as several (cuda0, nvml0, opencl0d0)
// while one MI300A PCI device carries six rsmi partitions. NVML, Slurm's GPU
// indices and CUDA under CUDA_DEVICE_ORDER=PCI_BUS_ID all number GPUs in PCI bus
// id order, so that order is the index space of CUDA_VISIBLE_DEVICES here.
#pragma once

#include <string>
#include <vector>

#include "common/device_list.h"
#include "hwloc_binding/topology.h"

namespace elastic {

inline constexpr unsigned kVendorNvidia = 0x10de;
inline constexpr unsigned kVendorAmd = 0x1002;

struct Gpu {
  std::string busid;           // "0000:18:00.0"
  unsigned vendor = 0;         // PCI vendor id
  hwloc_obj_t pci = nullptr;   // the PCI device object (owned by the topology)
};

// All NVIDIA and AMD GPU PCI devices (class 03xx display/3D or 12xx accelerator),
// one per bus id, sorted by bus id. BMC display chips have other vendors.
std::vector<Gpu> FindGpus(const Topology& topology);

// Keeps one vendor's GPUs. `vendor` is "", "nvidia" or "amd"; "" picks NVIDIA
// when any NVIDIA GPU is present, else AMD.
bool SelectVendor(const std::string& vendor, std::vector<Gpu>* gpus, std::string* err);

// The GPUs this node may use, in the order local ranks take them.
// CUDA_VISIBLE_DEVICES (integer indexes into the bus-id order; child processes
// see them renumbered in list order; GPU-<uuid> entries are matched against the
// NVIDIAUUID that hwloc's NVML backend records, when the topology has it), else
// SLURM_STEP_GPUS (Slurm's indexes, also bus-id order), else all of `gpus`.
// Under Slurm's ConstrainDevices, CUDA_VISIBLE_DEVICES is renumbered from 0
// inside the step's device cgroup while SLURM_STEP_GPUS keeps the node's
// indexes: when CUDA_VISIBLE_DEVICES is not a subset of SLURM_STEP_GPUS, its
// entries index the (sorted) SLURM_STEP_GPUS list instead.
// Either list may be null (unset); one with empty text counts as unset.
bool SelectVisibleGpus(const GpuList* cuda_visible_devices, const GpuList* slurm_step_gpus,
                       std::vector<Gpu>* gpus, std::string* err);
// The list that says which GPUs are visible (CUDA_VISIBLE_DEVICES before the
// Slurm one), null when neither is set: what messages quote.
const GpuList* VisibleGpuList(const GpuList* cuda_visible_devices, const GpuList* slurm_step_gpus);

}  // namespace elastic
