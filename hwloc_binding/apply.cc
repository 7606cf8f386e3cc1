// Binding a worker: the plan's lists become kernel masks in the agent
// (PrepareKernelBinding); the worker, before exec, only makes the calls
// (sched_setaffinity, set_mempolicy), so it needs no topology and binds by the
// plan's OS indexes.
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

constexpr unsigned kBits = 8 * sizeof(unsigned long);

// The kernel's bit mask of a list ("0-3,8"): word i holds bits i*64..i*64+63.
bool Mask(const char* what, const std::string& list, std::vector<unsigned long>* mask, unsigned* last,
          std::string* err) {
  Bitmap set;
  if (!Bitmap::ParseList(what, list, &set, err)) return false;
  *last = static_cast<unsigned>(hwloc_bitmap_last(set.get()));
  mask->assign(*last / kBits + 1, 0);
  unsigned bit = 0;
  hwloc_bitmap_foreach_begin(bit, set.get()) { (*mask)[bit / kBits] |= 1UL << (bit % kBits); }
  hwloc_bitmap_foreach_end();
  return true;
}

int Errno(long rc) { return rc == 0 ? 0 : errno; }

long SetMempolicy(int mode, const std::vector<unsigned long>& mask, unsigned long maxnode) {
  return syscall(SYS_set_mempolicy, mode, mask.data(), maxnode);
}

}  // namespace

bool PrepareKernelBinding(const BindingPlan& plan, const WorkerBinding& worker, KernelBinding* out,
                          std::string* err) {
  *out = KernelBinding{};
  // A plan made from another machine's XML names that machine's CPUs: applying
  // it here would bind to unrelated (or missing) CPUs, so it is only printed.
  if (!plan.this_system) return true;
  unsigned last = 0;
  if (!worker.cpus.empty() && !Mask("cpus", worker.cpus, &out->cpu_mask, &last, err)) return false;
  if (plan.membind == MemBind::kNone || worker.mems.empty()) return true;
  if (!Mask("mems", worker.mems, &out->mem_nodes, &last, err)) return false;
  out->maxnode = last + 2;  // the kernel reads maxnode - 1 bits
  size_t nodes = 0;
  for (unsigned long word : out->mem_nodes) nodes += static_cast<size_t>(__builtin_popcountl(word));
  if (plan.membind == MemBind::kStrict) {
    out->mem_mode = MPOL_BIND;
  } else if (nodes == 1) {
    out->mem_mode = MPOL_PREFERRED;
  } else {
    out->mem_mode = MPOL_PREFERRED_MANY;
    out->fallback_mode = MPOL_PREFERRED;
    out->fallback_nodes.assign(out->mem_nodes.size(), 0);
    for (size_t i = 0; i < out->mem_nodes.size(); ++i) {
      if (out->mem_nodes[i] != 0) {
        out->fallback_nodes[i] = out->mem_nodes[i] & (~out->mem_nodes[i] + 1);  // lowest node
        break;
      }
    }
  }
  return true;
}

int ApplyKernelBinding(const KernelBinding& b, const char** failed_call) {
  if (!b.cpu_mask.empty()) {
    if (int e = Errno(sched_setaffinity(0, b.cpu_mask.size() * sizeof(unsigned long),
                                        reinterpret_cast<const cpu_set_t*>(b.cpu_mask.data())))) {
      if (failed_call) *failed_call = "sched_setaffinity";
      return e;
    }
  }
  if (b.mem_mode < 0) return 0;
  int e = Errno(SetMempolicy(b.mem_mode, b.mem_nodes, b.maxnode));
  if (e == EINVAL && b.fallback_mode >= 0) e = Errno(SetMempolicy(b.fallback_mode, b.fallback_nodes, b.maxnode));
  if (e != 0 && failed_call) *failed_call = "set_mempolicy";
  return e;
}

bool ApplyBinding(const BindingPlan& plan, const WorkerBinding& worker, std::string* err) {
  KernelBinding binding;
  if (!PrepareKernelBinding(plan, worker, &binding, err)) return false;
  const char* call = "";
  if (int e = ApplyKernelBinding(binding, &call)) {
    if (std::string(call) == "sched_setaffinity") {
      *err = fmt::format("sched_setaffinity(cpus {}): {}", worker.cpus, std::strerror(e));
    } else {
      *err = fmt::format("set_mempolicy({} NUMA nodes {}): {}",
                         plan.membind == MemBind::kStrict ? "bind" : "preferred", worker.mems, std::strerror(e));
    }
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
