// hwloc_binding: which CPUs and memory nodes each local worker gets, and
// applying that to a freshly forked worker. Contract shared with launcher/.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/bind_mode.h"  // BindMode, MemBind: parsed there (one parser for plugin and launcher)
#include "common/device_list.h"  // GpuList: the GPU variables, parsed there

namespace elastic {

struct BindingRequest {
  BindMode mode = BindMode::kAuto;      // auto: gpu when the node has GPUs, else numa
  MemBind membind = MemBind::kPreferred;
  std::string topology_file;            // --topology, else $HWLOC_XMLFILE, else this machine
  std::string cpus_allowed;             // --cpus-allowed LIST (simulate a restriction)
  std::string gpu_vendor;               // "", "nvidia", "amd" ("": NVIDIA if the node has any, else AMD)
  // The node's GPU variables, parsed by the caller (common/device_list.h);
  // unset or set to "": every GPU. A list that did not parse is an error here
  // only where GPUs are mapped (not on a node whose topology shows none).
  std::optional<GpuList> cuda_visible_devices;  // indexes in bus id order, GPU-<uuid>, NoDevFiles, -1
  std::optional<GpuList> slurm_step_gpus;       // SLURM_STEP_GPUS, else SLURM_JOB_GPUS
  int nproc = 1;                        // local workers
};

// cpus/mems are empty in --bind none, and mems is empty with --membind none.
// gpu_busid is the rank's visible GPU in every mode when there is one (numa and
// none modes included: informative there); with no GPU it is empty (JSON null).
struct WorkerBinding {
  int local_rank = 0;
  std::optional<std::string> gpu_busid;  // "0000:18:00.0"
  std::string cpus;                      // OS-index list "0-23,48-71"; "" = unbound
  std::string mems;                      // NUMA OS-index list "0"; "" = no memory policy
  int cores = 0;                         // cores in `cpus` (for OMP_NUM_THREADS)
};

struct BindingPlan {
  BindMode mode = BindMode::kNone;      // the mode actually used (auto resolved)
  MemBind membind = MemBind::kPreferred;
  std::vector<WorkerBinding> workers;   // one per local rank
  std::string note;                     // non-empty when a fallback applied (say it once)
  bool this_system = true;              // false when loaded from another machine's XML
};

// Modes, as PlanBinding implements them (plan.cc has the details):
// - gpu: local rank i gets the i-th visible GPU (PCI bus id order) and that GPU's
//   locality (cpuset of its closest non-I/O ancestor) ∩ the allowed CPUs; memory =
//   the ancestor's NUMA nodes minus GPU-memory nodes. nproc > visible GPUs is an error
//   (auto then means numa, with a note: more workers than GPUs is a CPU job).
// - gpu-exclusive: the same, each locality's cores split evenly among the ranks
//   sharing it (disjoint whole cores; PUs when cores run short; shared PUs, with
//   a note, when even PUs run short).
// - numa: rank i on the (i mod n)-th NUMA node with allowed CPUs (DRAM nodes only).
// - none: no CPU or memory binding (gpu_busid still reported).
// Fallback (note set, said once): a GPU whose locality is the whole multi-NUMA
// machine, or has no allowed CPU, makes the GPU modes spread over NUMA nodes as
// numa does (GPUs kept); GPU modes on a node without GPUs do the same.
// The topology is loaded once per process and reused (not thread-safe: call
// from the agent's thread).

// Number of GPUs this node may use (visible devices, else all GPU PCI devices
// of the chosen vendor). For --nproc-per-node=gpu|auto.
bool CountGpus(const BindingRequest& request, int* count, std::string* err);

bool PlanBinding(const BindingRequest& request, BindingPlan* plan, std::string* err);

// One worker's binding as the kernel takes it, made in the agent so that the
// worker's side (between clone and exec, sharing the agent's memory) only makes
// system calls: its CPUs (sched_setaffinity) and memory policy (set_mempolicy:
// MPOL_PREFERRED, or MPOL_PREFERRED_MANY for several nodes with MPOL_PREFERRED
// on the first as the fallback before Linux 5.15; MPOL_BIND for strict).
struct KernelBinding {
  std::vector<unsigned long> cpu_mask;  // empty: CPUs left alone
  int mem_mode = -1;                    // -1: memory policy left alone
  std::vector<unsigned long> mem_nodes;
  int fallback_mode = -1;               // tried when mem_mode gets EINVAL
  std::vector<unsigned long> fallback_nodes;
  unsigned long maxnode = 0;
};

// Empty cpus/mems leave that part alone. A plan made from another machine's XML
// (this_system == false) gives an empty binding. False with *err on bad lists.
bool PrepareKernelBinding(const BindingPlan& plan, const WorkerBinding& worker, KernelBinding* out,
                          std::string* err);
// Applies it to the calling process: system calls only, no allocation (safe in a
// vfork-style child). Returns 0, or the errno of the call that failed, named in
// *failed_call ("sched_setaffinity" or "set_mempolicy") when given.
int ApplyKernelBinding(const KernelBinding& binding, const char** failed_call = nullptr);

// Both in one go (tests, tools): false with *err on failure.
bool ApplyBinding(const BindingPlan& plan, const WorkerBinding& worker, std::string* err);

// A worker's environment ("NAME=value" entries, as for execve), adjusted for its
// binding: HWLOC_XMLFILE removed (children would inherit another machine's
// topology); OMP_NUM_THREADS=<cores> unless already set (or cores == 0: unbound);
// CUDA_DEVICE_ORDER=PCI_BUS_ID unless already set when the worker has a GPU
// (local rank i's GPU is the i-th in bus id order; CUDA's default order may differ).
// Call it on the user's environment before adding the launcher's own variables.
void AdjustWorkerEnvironment(const WorkerBinding& worker, std::vector<std::string>* env);

// OMP_NUM_THREADS for local rank i: the cores of its binding shared among the
// workers bound to the same CPUs (--nproc-per-node=cpu puts several workers on
// one NUMA domain; each taking every core oversubscribes it, which torchrun
// avoids), at least 1; 0 when the worker is unbound.
int OmpThreads(const BindingPlan& plan, size_t i);

std::string PlanToJson(const BindingPlan& plan);   // [{"local_rank":0,"gpu":"...","cpus":"...","mems":"0"}]
std::string PlanToTable(const BindingPlan& plan);  // human-readable, one line per rank

}  // namespace elastic
