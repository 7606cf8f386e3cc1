// PlanBinding: which CPUs and NUMA nodes each local worker gets.
//
// gpu:            the GPU's locality (cpuset of its closest non-I/O ancestor: a
//                 Package, an SNC/NPS Group, an L3 cache, ...) ∩ allowed CPUs;
//                 memory = that ancestor's DRAM NUMA nodes.
// gpu-exclusive:  the same localities, with each one's cores split evenly among
//                 the workers that share it (disjoint, whole cores).
// numa:           workers round-robin over the NUMA nodes that have allowed CPUs.
// Fallback: a GPU attached to the whole (multi-NUMA) machine or whose locality
// has no allowed CPU gives no useful locality; then workers are spread like
// numa (still keeping their GPUs) and the plan's note says so.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>

#include "hwloc_binding/binding.h"
#include "hwloc_binding/gpus.h"
#include "hwloc_binding/topology.h"

namespace elastic {
namespace {

// A set of CPUs and memory nodes that one or more workers share.
struct Place {
  Bitmap cpus;
  Bitmap mems;
};

Bitmap And(hwloc_const_bitmap_t a, hwloc_const_bitmap_t b) {
  Bitmap result;
  hwloc_bitmap_and(result.get(), a, b);
  return result;
}

bool IsGpuMemory(hwloc_obj_t numa) { return numa->subtype && std::strcmp(numa->subtype, "GPUMemory") == 0; }

// NUMA nodes of `nodeset` that hold host DRAM and may be used: GPU memory exposed
// as NUMA nodes (POWER9 + V100) must not receive host allocations.
Bitmap DramNodes(const Topology& topology, hwloc_const_nodeset_t nodeset) {
  Bitmap dram;
  for (hwloc_obj_t numa = hwloc_get_next_obj_by_type(topology.get(), HWLOC_OBJ_NUMANODE, nullptr);
       numa; numa = hwloc_get_next_obj_by_type(topology.get(), HWLOC_OBJ_NUMANODE, numa)) {
    if (hwloc_bitmap_isset(nodeset, numa->os_index) && !IsGpuMemory(numa)) {
      hwloc_bitmap_set(dram.get(), numa->os_index);
    }
  }
  hwloc_bitmap_and(dram.get(), dram.get(), hwloc_topology_get_allowed_nodeset(topology.get()));
  return dram;
}

// The CPUs workers may get: --cpus-allowed; else, on this machine, the agent's
// own affinity (what Slurm's task plugin gave it; a forked worker inherits the
// calling thread's mask); else the XML's allowed cpuset (the exporting process's view).
bool AllowedCpus(const Topology& topology, const std::string& cpus_allowed, Bitmap* allowed,
                 std::string* err) {
  if (!cpus_allowed.empty()) return Bitmap::ParseList("--cpus-allowed", cpus_allowed, allowed, err);
  *allowed = Bitmap(hwloc_topology_get_allowed_cpuset(topology.get()));
  Bitmap own;
  if (topology.this_system() &&
      hwloc_get_cpubind(topology.get(), own.get(), HWLOC_CPUBIND_THREAD) == 0 && !own.empty()) {
    hwloc_bitmap_and(allowed->get(), allowed->get(), own.get());
  }
  if (allowed->empty()) {
    *err = fmt::format("{}: no allowed CPU", topology.source());
    return false;
  }
  return true;
}

// Workers' places when spreading over NUMA nodes: DRAM nodes with allowed CPUs.
std::vector<Place> NumaPlaces(const Topology& topology, const Bitmap& allowed) {
  std::vector<Place> places;
  for (hwloc_obj_t numa = hwloc_get_next_obj_by_type(topology.get(), HWLOC_OBJ_NUMANODE, nullptr);
       numa; numa = hwloc_get_next_obj_by_type(topology.get(), HWLOC_OBJ_NUMANODE, numa)) {
    if (IsGpuMemory(numa)) continue;
    Place place{And(numa->cpuset, allowed.get()), DramNodes(topology, numa->nodeset)};
    if (!place.cpus.empty() && !place.mems.empty()) places.push_back(std::move(place));
  }
  if (places.empty()) {  // no NUMA node with allowed CPUs: one place, all of them
    places.push_back({allowed, DramNodes(topology, topology.root()->nodeset)});
  }
  return places;
}

int DramNodeCount(const Topology& topology) {
  return DramNodes(topology, topology.root()->nodeset).weight();
}

// Cores (or PUs where a trimmed topology has no cores) meeting `cpus`, each
// reduced to its PUs inside `cpus`, in topology order.
std::vector<Bitmap> CoresIn(const Topology& topology, const Bitmap& cpus) {
  std::vector<Bitmap> cores;
  hwloc_obj_type_t type =
      hwloc_get_nbobjs_by_type(topology.get(), HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
  for (hwloc_obj_t obj = hwloc_get_next_obj_by_type(topology.get(), type, nullptr); obj;
       obj = hwloc_get_next_obj_by_type(topology.get(), type, obj)) {
    Bitmap core = And(obj->cpuset, cpus.get());
    if (!core.empty()) cores.push_back(std::move(core));
  }
  return cores;
}

std::vector<Bitmap> PusIn(const Bitmap& cpus) {
  std::vector<Bitmap> pus;
  unsigned pu = 0;
  hwloc_bitmap_foreach_begin(pu, cpus.get()) {
    Bitmap one;
    hwloc_bitmap_set(one.get(), pu);
    pus.push_back(std::move(one));
  }
  hwloc_bitmap_foreach_end();
  return pus;
}

// Worker `index` of `count` sharing `cpus`: a contiguous, balanced slice of its
// whole cores; of its PUs when there are fewer cores than workers; one shared
// PU when there are fewer PUs than workers (then *shared is set).
Bitmap ExclusiveSlice(const Topology& topology, const Bitmap& cpus, size_t index, size_t count,
                      bool* shared) {
  std::vector<Bitmap> units = CoresIn(topology, cpus);
  if (units.size() < count) units = PusIn(cpus);
  Bitmap slice;
  if (units.size() < count) {
    *shared = true;
    return units[index % units.size()];
  }
  for (size_t u = index * units.size() / count; u < (index + 1) * units.size() / count; ++u) {
    hwloc_bitmap_or(slice.get(), slice.get(), units[u].get());
  }
  return slice;
}

void AddNote(BindingPlan* plan, const std::string& note) {
  if (!plan->note.empty()) plan->note += "; ";
  plan->note += note;
}

// Each GPU worker's place (its GPU's locality), or "" in *fallback_reason when
// one of them has no usable locality.
std::vector<Place> GpuPlaces(const Topology& topology, const std::vector<Gpu>& gpus, int nproc,
                             const Bitmap& allowed, std::string* fallback_reason) {
  std::vector<Place> places;
  int dram_nodes = DramNodeCount(topology);
  for (int rank = 0; rank < nproc; ++rank) {
    const Gpu& gpu = gpus[static_cast<size_t>(rank)];
    hwloc_obj_t ancestor = hwloc_get_non_io_ancestor_obj(topology.get(), gpu.pci);
    Place place{And(ancestor->cpuset, allowed.get()), DramNodes(topology, ancestor->nodeset)};
    if (dram_nodes > 1 && hwloc_bitmap_isequal(ancestor->cpuset, topology.root()->cpuset)) {
      *fallback_reason = fmt::format(
          "GPU {} has no CPU locality (the topology attaches it to the whole machine)", gpu.busid);
      return {};
    }
    if (place.cpus.empty()) {
      *fallback_reason = fmt::format("GPU {}'s CPUs ({}) are all outside the allowed CPUs ({})",
                                     gpu.busid, Bitmap(ancestor->cpuset).List(), allowed.List());
      return {};
    }
    places.push_back(std::move(place));
  }
  return places;
}

int CountCores(const Topology& topology, const Bitmap& cpus) {
  return static_cast<int>(CoresIn(topology, cpus).size());
}

// The topology of `file` ("" = this machine), loaded once per process: the
// launcher asks CountGpus then PlanBinding, and plans again on every restart.
// A changed XML file (size or mtime) is loaded again.
const Topology* CachedTopology(const std::string& file, std::string* err) {
  static std::unique_ptr<Topology> cached;
  static std::string cached_key;
  std::string key = file;
  if (!file.empty()) {
    std::error_code ec;
    auto size = std::filesystem::file_size(file, ec);
    auto mtime = std::filesystem::last_write_time(file, ec).time_since_epoch().count();
    key += fmt::format("\n{}\n{}", ec ? 0 : size, ec ? 0 : mtime);
  }
  if (cached && cached_key == key) return cached.get();
  auto topology = std::make_unique<Topology>();
  if (!topology->Load(file, err)) return nullptr;
  cached = std::move(topology);
  cached_key = key;
  return cached.get();
}

// The topology and the GPUs the request may use. When the topology shows no
// GPU at all (a CPU node, or a container that hides PCI devices), visible-device
// variables cannot be mapped: they are ignored and *note says so.
bool LoadGpus(const BindingRequest& request, const Topology** topology, std::vector<Gpu>* gpus,
              std::string* note, std::string* err) {
  *topology = CachedTopology(ResolveTopologyFile(request.topology_file), err);
  if (!*topology) return false;
  *gpus = FindGpus(**topology);
  if (!SelectVendor(request.gpu_vendor, gpus, err)) return false;
  const GpuList* cvd = request.cuda_visible_devices ? &*request.cuda_visible_devices : nullptr;
  const GpuList* step = request.slurm_step_gpus ? &*request.slurm_step_gpus : nullptr;
  if (gpus->empty()) {
    if (const GpuList* visible = VisibleGpuList(cvd, step)) {
      *note = fmt::format("{} shows no {}GPU; ignoring {}={}", (*topology)->source(),
                          request.gpu_vendor.empty() ? "" : request.gpu_vendor + " ",
                          visible->name, visible->text);
    }
    return true;
  }
  return SelectVisibleGpus(cvd, step, gpus, err);
}

// auto: gpu when there is a GPU per worker, else numa (with a note when GPUs
// exist: more workers than GPUs is then a CPU job, not an error). An explicit
// GPU mode with more workers than visible GPUs is an error.
bool ResolveMode(const BindingRequest& request, size_t gpus, const Topology& topology, BindingPlan* plan,
                 std::string* err) {
  size_t nproc = static_cast<size_t>(request.nproc);
  plan->mode = request.mode;
  if (plan->mode == BindMode::kAuto) {
    plan->mode = gpus > 0 && nproc <= gpus ? BindMode::kGpu : BindMode::kNuma;
    if (gpus > 0 && nproc > gpus) {
      AddNote(plan, fmt::format("{} workers but {} visible GPU(s): binding workers to NUMA nodes", nproc, gpus));
    }
    return true;
  }
  bool gpu_mode = plan->mode == BindMode::kGpu || plan->mode == BindMode::kGpuExclusive;
  if (gpu_mode && gpus > 0 && nproc > gpus) {
    *err = fmt::format(
        "--bind {}: {} workers per node but {} visible GPU(s) on {}; lower --nproc-per-node "
        "(or use --nproc-per-node=gpu), or bind with --bind numa",
        BindModeName(plan->mode), nproc, gpus, topology.source());
    return false;
  }
  return true;
}

// gpu-exclusive: splits each place among the workers that share it.
void SplitShared(const Topology& topology, std::vector<Place>* places, BindingPlan* plan) {
  std::map<std::string, std::vector<size_t>> sharing;
  for (size_t rank = 0; rank < places->size(); ++rank) {
    sharing[(*places)[rank].cpus.List() + "/" + (*places)[rank].mems.List()].push_back(rank);
  }
  bool shared = false;
  std::vector<Place> split = *places;
  for (const auto& [key, ranks] : sharing) {
    for (size_t j = 0; j < ranks.size(); ++j) {
      split[ranks[j]].cpus = ExclusiveSlice(topology, (*places)[ranks[j]].cpus, j, ranks.size(), &shared);
    }
  }
  *places = std::move(split);
  if (shared) AddNote(plan, "more workers than CPUs: some workers share a CPU");
}

}  // namespace

bool CountGpus(const BindingRequest& request, int* count, std::string* err) {
  const Topology* topology = nullptr;
  std::vector<Gpu> gpus;
  std::string note;
  if (!LoadGpus(request, &topology, &gpus, &note, err)) return false;
  *count = static_cast<int>(gpus.size());
  return true;
}

bool PlanBinding(const BindingRequest& request, BindingPlan* plan, std::string* err) {
  if (request.nproc < 1) {
    *err = fmt::format("nproc-per-node must be at least 1 (got {})", request.nproc);
    return false;
  }
  const Topology* loaded = nullptr;
  std::vector<Gpu> gpus;
  std::string gpu_note;
  if (!LoadGpus(request, &loaded, &gpus, &gpu_note, err)) return false;
  const Topology& topology = *loaded;
  Bitmap allowed;
  if (!AllowedCpus(topology, request.cpus_allowed, &allowed, err)) return false;

  *plan = BindingPlan{};
  plan->membind = request.membind;
  plan->this_system = topology.this_system();
  if (!gpu_note.empty()) AddNote(plan, gpu_note);
  if (!ResolveMode(request, gpus.size(), topology, plan, err)) return false;
  bool gpu_mode = plan->mode == BindMode::kGpu || plan->mode == BindMode::kGpuExclusive;
  size_t nproc = static_cast<size_t>(request.nproc);

  std::vector<Place> places;  // one per worker
  if (gpu_mode && !gpus.empty()) {
    std::string reason;
    places = GpuPlaces(topology, gpus, request.nproc, allowed, &reason);
    if (places.empty()) AddNote(plan, reason + "; spreading workers over NUMA nodes instead");
  } else if (gpu_mode) {
    AddNote(plan, fmt::format("no GPU on {}; spreading workers over NUMA nodes instead", topology.source()));
  }
  if (places.empty() && plan->mode != BindMode::kNone) {
    std::vector<Place> numa = NumaPlaces(topology, allowed);
    for (size_t rank = 0; rank < nproc; ++rank) places.push_back(numa[rank % numa.size()]);
  }

  if (plan->mode == BindMode::kGpuExclusive) SplitShared(topology, &places, plan);

  for (size_t rank = 0; rank < nproc; ++rank) {
    WorkerBinding worker;
    worker.local_rank = static_cast<int>(rank);
    if (rank < gpus.size()) worker.gpu_busid = gpus[rank].busid;
    if (!places.empty()) {
      worker.cpus = places[rank].cpus.List();
      worker.cores = CountCores(topology, places[rank].cpus);
      if (request.membind != MemBind::kNone) worker.mems = places[rank].mems.List();
    }
    plan->workers.push_back(std::move(worker));
  }
  return true;
}

}  // namespace elastic
