// gpu-exclusive, numa and the fallback for GPUs without locality, on every
// topology of tests/topologies.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>

#include "common/parse.h"
#include "hwloc_binding/binding.h"
#include "hwloc_binding/expected_tsv.h"
#include "hwloc_binding/topology.h"

namespace elastic {
namespace {

using testing::ExpectedRow;
using testing::PciRows;
using testing::ReadExpected;
using testing::TopologyFiles;
using testing::TopologyPath;

Bitmap List(const std::string& text) { return testing::ParsedList(text); }

bool Intersects(const Bitmap& a, const Bitmap& b) { return hwloc_bitmap_intersects(a.get(), b.get()); }
bool Includes(const Bitmap& outer, const Bitmap& inner) { return hwloc_bitmap_isincluded(inner.get(), outer.get()); }

class SpreadTest : public ::testing::Test {
 protected:
  void SetUp() override { unsetenv("HWLOC_XMLFILE"); }

  static BindingPlan Plan(const std::string& file, BindMode mode, int nproc) {
    return testing::PlanOrFail(testing::TopologyRequest(file, mode, nproc));
  }

  static int Gpus(const std::string& file) {
    BindingRequest request;
    request.topology_file = TopologyPath(file);
    int count = 0;
    std::string err;
    EXPECT_TRUE(CountGpus(request, &count, &err)) << err;
    return count;
  }

  static std::unique_ptr<Topology> Load(const std::string& file) {
    auto topology = std::make_unique<Topology>();
    std::string err;
    EXPECT_TRUE(topology->Load(TopologyPath(file), &err)) << err;
    return topology;
  }

  // DRAM NUMA nodes that have CPUs, by OS index -> their cpuset.
  static std::map<unsigned, Bitmap> NumaNodes(const Topology& topology) {
    std::map<unsigned, Bitmap> nodes;
    for (hwloc_obj_t numa = hwloc_get_next_obj_by_type(topology.get(), HWLOC_OBJ_NUMANODE, nullptr); numa;
         numa = hwloc_get_next_obj_by_type(topology.get(), HWLOC_OBJ_NUMANODE, numa)) {
      bool gpu_memory = numa->subtype && std::string(numa->subtype) == "GPUMemory";
      if (!gpu_memory && !hwloc_bitmap_iszero(numa->cpuset)) nodes.emplace(numa->os_index, Bitmap(numa->cpuset));
    }
    return nodes;
  }

  // Each worker's cpus reduced to whole cores: the cores it touches, as sets.
  static std::vector<Bitmap> CoresOf(const Topology& topology, const Bitmap& cpus) {
    std::vector<Bitmap> cores;
    for (hwloc_obj_t core = hwloc_get_next_obj_by_type(topology.get(), HWLOC_OBJ_CORE, nullptr); core;
         core = hwloc_get_next_obj_by_type(topology.get(), HWLOC_OBJ_CORE, core)) {
      if (hwloc_bitmap_intersects(core->cpuset, cpus.get())) cores.emplace_back(core->cpuset);
    }
    return cores;
  }
};

// gpu-exclusive: workers that share a locality split its cores: disjoint,
// inside the locality, whole cores, core counts within one of each other.
TEST_F(SpreadTest, GpuExclusiveSplitsEachLocalityIntoDisjointBalancedWholeCores) {
  for (const std::string& file : TopologyFiles()) {
    SCOPED_TRACE(file);
    auto topology = Load(file);
    int gpus = Gpus(file);
    // Without GPUs, the NUMA nodes are the localities: two workers per node.
    int nproc = gpus > 0 ? gpus : 2 * static_cast<int>(NumaNodes(*topology).size());
    BindingPlan shared = Plan(file, gpus > 0 ? BindMode::kGpu : BindMode::kNuma, nproc);
    BindingPlan exclusive = Plan(file, BindMode::kGpuExclusive, nproc);
    ASSERT_EQ(exclusive.workers.size(), static_cast<size_t>(nproc));
    EXPECT_EQ(exclusive.mode, BindMode::kGpuExclusive);
    std::map<std::string, std::vector<size_t>> groups;  // locality -> ranks
    for (size_t rank = 0; rank < exclusive.workers.size(); ++rank) {
      groups[shared.workers[rank].cpus].push_back(rank);
    }
    for (const auto& [locality_text, ranks] : groups) {
      SCOPED_TRACE("locality " + locality_text);
      Bitmap locality = List(locality_text);
      size_t locality_cores = CoresOf(*topology, locality).size();
      if (static_cast<size_t>(locality.weight()) < ranks.size()) {
        // Trimmed files (nvidiaDGX2.xml: 16 GPUs, 4 PUs): more workers than
        // CPUs. One PU each, spread evenly, and the plan says CPUs are shared.
        EXPECT_NE(exclusive.note.find("share a CPU"), std::string::npos) << exclusive.note;
        std::map<std::string, size_t> users;
        for (size_t rank : ranks) {
          EXPECT_EQ(List(exclusive.workers[rank].cpus).weight(), 1);
          ++users[exclusive.workers[rank].cpus];
        }
        EXPECT_EQ(users.size(), static_cast<size_t>(locality.weight()));
        for (const auto& [pu, count] : users) EXPECT_LE(count, ranks.size() / users.size() + 1) << pu;
        continue;
      }
      // Whole cores when there are enough of them, else hyperthreads (PUs).
      bool whole_cores = locality_cores >= ranks.size();
      Bitmap covered;
      std::set<size_t> counts;
      for (size_t a : ranks) {
        const WorkerBinding& worker = exclusive.workers[a];
        Bitmap cpus = List(worker.cpus);
        EXPECT_FALSE(cpus.empty());
        EXPECT_TRUE(Includes(locality, cpus)) << worker.cpus;
        EXPECT_EQ(worker.mems, shared.workers[a].mems);
        EXPECT_EQ(worker.gpu_busid, shared.workers[a].gpu_busid);
        std::vector<Bitmap> cores = CoresOf(*topology, cpus);
        EXPECT_EQ(worker.cores, static_cast<int>(cores.size()));
        if (whole_cores) {
          for (const Bitmap& core : cores) {  // whole cores (as far as the locality has them)
            Bitmap in_locality;
            hwloc_bitmap_and(in_locality.get(), core.get(), locality.get());
            EXPECT_TRUE(Includes(cpus, in_locality)) << "rank " << a << " has part of core " << core.List();
          }
        }
        counts.insert(whole_cores ? cores.size() : static_cast<size_t>(cpus.weight()));
        for (size_t b : ranks) {
          if (b != a) {
            EXPECT_FALSE(Intersects(cpus, List(exclusive.workers[b].cpus))) << a << " vs " << b;
          }
        }
        hwloc_bitmap_or(covered.get(), covered.get(), cpus.get());
      }
      EXPECT_LE(*counts.rbegin() - *counts.begin(), 1u) << "unbalanced";
      EXPECT_TRUE(covered == locality) << "left unused: " << locality.List() << " vs " << covered.List();
    }
  }
}

TEST_F(SpreadTest, GpuExclusiveGivesFourGpusOfOneSocketAQuarterEach) {
  // g4dnmetal: 8 T4, 4 per socket; each socket's locality is split in four.
  std::vector<ExpectedRow> pci = PciRows(ReadExpected(), "g4dnmetal.xml", "10de");
  ASSERT_EQ(pci.size(), 8u);
  BindingPlan plan = Plan("g4dnmetal.xml", BindMode::kGpuExclusive, 8);
  for (size_t rank = 0; rank < 8; ++rank) {
    Bitmap locality = List(pci[rank].at("locality_pus"));
    size_t locality_cores = Split(pci[rank].at("locality_cores"), ',').size();
    EXPECT_EQ(plan.workers[rank].cores, static_cast<int>(locality_cores / 4));
    EXPECT_EQ(List(plan.workers[rank].cpus).weight(), locality.weight() / 4);
    EXPECT_TRUE(Includes(locality, List(plan.workers[rank].cpus)));
  }
}

TEST_F(SpreadTest, NumaModeSpreadsWorkersRoundRobinOverNumaNodes) {
  for (const std::string& file : TopologyFiles()) {
    SCOPED_TRACE(file);
    auto topology = Load(file);
    std::map<unsigned, Bitmap> nodes = NumaNodes(*topology);
    int nproc = 2 * static_cast<int>(nodes.size()) + 1;
    BindingPlan plan = Plan(file, BindMode::kNuma, nproc);
    EXPECT_EQ(plan.mode, BindMode::kNuma);
    ASSERT_EQ(plan.workers.size(), static_cast<size_t>(nproc));
    std::map<std::string, int> per_node;
    for (const WorkerBinding& worker : plan.workers) {
      Bitmap mems = List(worker.mems);
      ASSERT_EQ(mems.weight(), 1) << worker.mems;
      unsigned node = static_cast<unsigned>(hwloc_bitmap_first(mems.get()));
      ASSERT_TRUE(nodes.count(node)) << "node " << node << " is not a DRAM node with CPUs";
      Bitmap node_cpus = nodes.at(node);
      hwloc_bitmap_and(node_cpus.get(), node_cpus.get(), hwloc_topology_get_allowed_cpuset(topology->get()));
      EXPECT_EQ(worker.cpus, node_cpus.List());
      ++per_node[worker.mems];
    }
    EXPECT_EQ(per_node.size(), nodes.size());  // every node used
    for (const auto& [node, count] : per_node) EXPECT_GE(count, 2) << node;
    // Round-robin: consecutive ranks on different nodes (when there are several).
    if (nodes.size() > 1) {
      EXPECT_NE(plan.workers[0].mems, plan.workers[1].mems);
    }
    EXPECT_EQ(plan.workers[0].mems, plan.workers[nodes.size()].mems);
  }
}

TEST_F(SpreadTest, AutoModeIsNumaWithoutGpus) {
  // nvidiagpunumanodes-kept.xml's GPUs have no vendor id: not GPUs for us.
  BindingPlan plan = Plan("nvidiagpunumanodes-kept.xml", BindMode::kAuto, 2);
  EXPECT_EQ(plan.mode, BindMode::kNuma);
  for (const WorkerBinding& worker : plan.workers) EXPECT_FALSE(worker.gpu_busid);
}

TEST_F(SpreadTest, GpusAttachedToTheWholeMachineFallBackToNumaSpreading) {
  const std::string file = "topo.j3c053.xml";
  std::vector<ExpectedRow> pci = PciRows(ReadExpected(), file, "10de");
  ASSERT_EQ(pci.size(), 2u);
  ASSERT_EQ(pci[0].at("ancestor").rfind("Machine", 0), 0u);
  auto topology = Load(file);
  std::map<unsigned, Bitmap> nodes = NumaNodes(*topology);
  ASSERT_EQ(nodes.size(), 2u);
  for (BindMode mode : {BindMode::kGpu, BindMode::kAuto, BindMode::kGpuExclusive}) {
    BindingPlan plan = Plan(file, mode, 2);
    EXPECT_NE(plan.note.find("whole machine"), std::string::npos) << plan.note;
    EXPECT_NE(plan.note.find(pci[0].at("pci_busid")), std::string::npos) << plan.note;
    ASSERT_EQ(plan.workers.size(), 2u);
    for (size_t rank = 0; rank < 2; ++rank) {
      const WorkerBinding& worker = plan.workers[rank];
      EXPECT_EQ(worker.gpu_busid.value_or(""), pci[rank].at("pci_busid"));
      Bitmap mems = List(worker.mems);
      ASSERT_EQ(mems.weight(), 1);
      EXPECT_TRUE(Includes(nodes.at(static_cast<unsigned>(hwloc_bitmap_first(mems.get()))), List(worker.cpus)));
    }
    EXPECT_NE(plan.workers[0].mems, plan.workers[1].mems);  // one worker per socket
    EXPECT_FALSE(Intersects(List(plan.workers[0].cpus), List(plan.workers[1].cpus)));
    EXPECT_NE(PlanToTable(plan).find(plan.note), std::string::npos);
  }
}

TEST_F(SpreadTest, LocalityOutsideTheAllowedCpusFallsBack) {
  std::vector<ExpectedRow> pci = PciRows(ReadExpected(), "g4dnmetal.xml", "10de");
  BindingRequest request;
  request.topology_file = TopologyPath("g4dnmetal.xml");
  request.mode = BindMode::kGpu;
  request.nproc = 1;
  request.cpus_allowed = pci[7].at("locality_pus");  // GPU 0 is on the other socket
  BindingPlan plan;
  std::string err;
  ASSERT_TRUE(PlanBinding(request, &plan, &err)) << err;
  EXPECT_NE(plan.note.find("outside the allowed CPUs"), std::string::npos) << plan.note;
  EXPECT_EQ(plan.workers[0].gpu_busid.value_or(""), pci[0].at("pci_busid"));
  EXPECT_TRUE(Includes(List(pci[7].at("locality_pus")), List(plan.workers[0].cpus)));
  EXPECT_FALSE(plan.workers[0].cpus.empty());
}

TEST_F(SpreadTest, NoneModeBindsNothing) {
  BindingPlan plan = Plan("g4dnmetal.xml", BindMode::kNone, 2);
  for (const WorkerBinding& worker : plan.workers) {
    EXPECT_EQ(worker.cpus, "");
    EXPECT_EQ(worker.mems, "");
    EXPECT_EQ(worker.cores, 0);
    EXPECT_TRUE(worker.gpu_busid);
  }
}

TEST_F(SpreadTest, MembindNoneLeavesMemoryAlone) {
  BindingRequest request;
  request.topology_file = TopologyPath("ipa20.xml");
  request.membind = MemBind::kNone;
  request.nproc = 4;
  BindingPlan plan;
  std::string err;
  ASSERT_TRUE(PlanBinding(request, &plan, &err)) << err;
  EXPECT_EQ(plan.membind, MemBind::kNone);
  for (const WorkerBinding& worker : plan.workers) {
    EXPECT_EQ(worker.mems, "");
    EXPECT_FALSE(worker.cpus.empty());
  }
}

}  // namespace
}  // namespace elastic
