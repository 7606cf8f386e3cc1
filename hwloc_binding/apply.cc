// ApplyBinding: runs in the forked worker before exec. Uses the kernel calls
// directly (sched_setaffinity, set_mempolicy) rather than hwloc, so it needs no
// topology in the child and binds by the plan's OS indexes.
#include <fmt/format.h>
#include <linux/mempolicy.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "hwloc_binding/binding.h"
#include "hwloc_binding/topology.h"

namespace elastic {
namespace {

bool BindCpus(const std::string& cpus, std::string* err) {
  Bitmap set;
  if (!Bitmap::ParseList("cpus", cpus, &set, err)) return false;
  int last = hwloc_bitmap_last(set.get());
  cpu_set_t* mask = CPU_ALLOC(last + 1);
  size_t size = CPU_ALLOC_SIZE(last + 1);
  CPU_ZERO_S(size, mask);
  unsigned cpu = 0;
  hwloc_bitmap_foreach_begin(cpu, set.get()) { CPU_SET_S(cpu, size, mask); }
  hwloc_bitmap_foreach_end();
  int rc = sched_setaffinity(0, size, mask);
  int saved = errno;
  CPU_FREE(mask);
  if (rc != 0) {
    *err = fmt::format("sched_setaffinity(cpus {}): {}", cpus, std::strerror(saved));
    return false;
  }
  return true;
}

long SetMempolicy(int mode, const std::vector<unsigned long>& mask, unsigned long maxnode) {
  return syscall(SYS_set_mempolicy, mode, mask.data(), maxnode);
}

// preferred: MPOL_PREFERRED for one node; for several, MPOL_PREFERRED_MANY
// (Linux 5.15+), else the first of them. strict: MPOL_BIND (allocations fail
// rather than spill over: a full node then means OOM for the worker).
bool BindMemory(MemBind membind, const std::string& mems, std::string* err) {
  Bitmap nodes;
  if (!Bitmap::ParseList("mems", mems, &nodes, err)) return false;
  constexpr unsigned kBits = 8 * sizeof(unsigned long);
  auto make_mask = [&](const Bitmap& set) {
    std::vector<unsigned long> mask(static_cast<size_t>(hwloc_bitmap_last(set.get())) / kBits + 1, 0);
    unsigned node = 0;
    hwloc_bitmap_foreach_begin(node, set.get()) { mask[node / kBits] |= 1UL << (node % kBits); }
    hwloc_bitmap_foreach_end();
    return mask;
  };
  // The kernel reads maxnode - 1 bits.
  unsigned long maxnode = static_cast<unsigned long>(hwloc_bitmap_last(nodes.get())) + 2;
  long rc = 0;
  if (membind == MemBind::kStrict) {
    rc = SetMempolicy(MPOL_BIND, make_mask(nodes), maxnode);
  } else if (nodes.weight() == 1) {
    rc = SetMempolicy(MPOL_PREFERRED, make_mask(nodes), maxnode);
  } else {
    rc = SetMempolicy(MPOL_PREFERRED_MANY, make_mask(nodes), maxnode);
    if (rc != 0 && errno == EINVAL) {
      Bitmap first;
      hwloc_bitmap_only(first.get(), static_cast<unsigned>(hwloc_bitmap_first(nodes.get())));
      rc = SetMempolicy(MPOL_PREFERRED, make_mask(first), maxnode);
    }
  }
  if (rc != 0) {
    *err = fmt::format("set_mempolicy({} NUMA nodes {}): {}",
                       membind == MemBind::kStrict ? "bind" : "preferred", mems, std::strerror(errno));
    return false;
  }
  return true;
}

}  // namespace

bool ApplyBinding(const BindingPlan& plan, const WorkerBinding& worker, std::string* err) {
  // A plan made from another machine's XML names that machine's CPUs: applying
  // it here would bind to unrelated (or missing) CPUs, so it is only printed.
  if (!plan.this_system) return true;
  if (!worker.cpus.empty() && !BindCpus(worker.cpus, err)) return false;
  if (plan.membind != MemBind::kNone && !worker.mems.empty() &&
      !BindMemory(plan.membind, worker.mems, err)) {
    return false;
  }
  return true;
}

void AdjustWorkerEnvironment(const WorkerBinding& worker, std::vector<std::string>* env) {
  auto find = [env](const std::string& name) {
    for (auto it = env->begin(); it != env->end(); ++it) {
      if (it->size() > name.size() && it->compare(0, name.size(), name) == 0 && (*it)[name.size()] == '=') {
        return it;
      }
    }
    return env->end();
  };
  if (auto it = find("HWLOC_XMLFILE"); it != env->end()) env->erase(it);
  if (worker.cores > 0 && find("OMP_NUM_THREADS") == env->end()) {
    env->push_back(fmt::format("OMP_NUM_THREADS={}", worker.cores));
  }
  if (worker.gpu_busid && find("CUDA_DEVICE_ORDER") == env->end()) {
    env->push_back("CUDA_DEVICE_ORDER=PCI_BUS_ID");
  }
}

}  // namespace elastic
