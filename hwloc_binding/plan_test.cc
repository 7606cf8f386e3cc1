// PlanBinding against expected.tsv: the GPU locality hwloc's own CLI computes
// for every GPU of 12 real GPU servers (tests/topologies/README.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "hwloc_binding/binding.h"
#include "hwloc_binding/expected_tsv.h"
#include "hwloc_binding/topology.h"

namespace elastic {
namespace {

using testing::ExpectedRow;
using testing::PciRows;
using testing::PciVendors;
using testing::ReadExpected;
using testing::TopologyFiles;
using testing::TopologyPath;

// The GPUs of this file are attached to the whole machine: no locality.
constexpr char kNoLocalityFile[] = "topo.j3c053.xml";

Bitmap List(const std::string& text) { return testing::ParsedList(text); }

class PlanTest : public ::testing::Test {
 protected:
  void SetUp() override { unsetenv("HWLOC_XMLFILE"); }

  static BindingRequest Request(const std::string& file, BindMode mode, int nproc) {
    return testing::TopologyRequest(file, mode, nproc);
  }

  static BindingPlan Plan(const BindingRequest& request) { return testing::PlanOrFail(request); }

  static int Gpus(const BindingRequest& request) {
    int count = -1;
    std::string err;
    EXPECT_TRUE(CountGpus(request, &count, &err)) << err;
    return count;
  }

  // Files whose GPUs have vendor ids (not nvidiagpunumanodes-kept.xml's 0000:0000).
  static std::vector<std::string> FilesWithGpus(const std::vector<ExpectedRow>& rows) {
    std::vector<std::string> files;
    for (const std::string& file : TopologyFiles()) {
      for (const std::string& vendor : PciVendors(rows, file)) {
        if (vendor == "10de" || vendor == "1002") {
          files.push_back(file);
          break;
        }
      }
    }
    return files;
  }

  // The default vendor: NVIDIA when the file has any NVIDIA GPU.
  static std::string DefaultVendor(const std::vector<ExpectedRow>& rows, const std::string& file) {
    std::vector<std::string> vendors = PciVendors(rows, file);
    return std::count(vendors.begin(), vendors.end(), "10de") ? "10de" : "1002";
  }

  // Local rank i <-> the i-th GPU by bus id; cpus/mems as hwloc-calc computes them.
  static void ExpectMatchesRows(const BindingPlan& plan, const std::vector<ExpectedRow>& pci) {
    ASSERT_EQ(plan.workers.size(), pci.size());
    EXPECT_EQ(plan.note, "");
    for (size_t i = 0; i < pci.size(); ++i) {
      SCOPED_TRACE("local rank " + std::to_string(i));
      const WorkerBinding& worker = plan.workers[i];
      EXPECT_EQ(worker.local_rank, static_cast<int>(i));
      EXPECT_EQ(worker.gpu_busid.value_or("none"), pci[i].at("pci_busid"));
      EXPECT_EQ(List(worker.cpus).List(), List(pci[i].at("locality_pus")).List());
      EXPECT_EQ(List(worker.mems).List(), List(pci[i].at("numa_dram")).List());
    }
  }
};

TEST_F(PlanTest, ExpectedTsvIsThere) {
  std::vector<ExpectedRow> rows = ReadExpected();
  EXPECT_GT(rows.size(), 100u);
  EXPECT_GE(FilesWithGpus(rows).size(), 10u);
}

TEST_F(PlanTest, GpuModeGivesEachRankItsGpusLocalityOnEveryFile) {
  std::vector<ExpectedRow> rows = ReadExpected();
  for (const std::string& file : FilesWithGpus(rows)) {
    if (file == kNoLocalityFile) continue;
    SCOPED_TRACE(file);
    std::vector<ExpectedRow> pci = PciRows(rows, file, DefaultVendor(rows, file));
    BindingRequest request = Request(file, BindMode::kGpu, 0);
    request.nproc = Gpus(request);  // --nproc-per-node=gpu
    ASSERT_EQ(request.nproc, static_cast<int>(pci.size()));
    BindingPlan plan = Plan(request);
    EXPECT_EQ(plan.mode, BindMode::kGpu);
    EXPECT_FALSE(plan.this_system);
    ExpectMatchesRows(plan, pci);
  }
}

TEST_F(PlanTest, AutoModeIsGpuModeWhenTheNodeHasGpus) {
  std::vector<ExpectedRow> rows = ReadExpected();
  for (const std::string& file : FilesWithGpus(rows)) {
    if (file == kNoLocalityFile) continue;
    SCOPED_TRACE(file);
    std::vector<ExpectedRow> pci = PciRows(rows, file, DefaultVendor(rows, file));
    BindingPlan plan = Plan(Request(file, BindMode::kAuto, static_cast<int>(pci.size())));
    EXPECT_EQ(plan.mode, BindMode::kGpu);
    ExpectMatchesRows(plan, pci);
  }
}

TEST_F(PlanTest, GpuVendorChoosesAmongMixedVendors) {
  std::vector<ExpectedRow> rows = ReadExpected();
  int mixed = 0;
  for (const std::string& file : FilesWithGpus(rows)) {
    if (file == kNoLocalityFile) continue;
    for (const auto& [vendor, name] : {std::pair{"10de", "nvidia"}, std::pair{"1002", "amd"}}) {
      std::vector<ExpectedRow> pci = PciRows(rows, file, vendor);
      BindingRequest request = Request(file, BindMode::kGpu, 1);
      request.gpu_vendor = name;
      SCOPED_TRACE(file + " " + name);
      ASSERT_EQ(Gpus(request), static_cast<int>(pci.size()));
      if (pci.empty()) continue;
      request.nproc = static_cast<int>(pci.size());
      ExpectMatchesRows(Plan(request), pci);
    }
    mixed += PciVendors(rows, file).size() > 1;
  }
  EXPECT_GE(mixed, 1);  // chimera.xml: a GTX 1070 and a Vega
}

TEST_F(PlanTest, FewerWorkersThanGpusTakeTheFirstGpus) {
  std::vector<ExpectedRow> rows = ReadExpected();
  std::vector<ExpectedRow> pci = PciRows(rows, "ipa20.xml", "10de");
  ASSERT_GE(pci.size(), 2u);
  pci.resize(2);
  ExpectMatchesRows(Plan(Request("ipa20.xml", BindMode::kGpu, 2)), pci);
}

TEST_F(PlanTest, TopologyFromHwlocXmlfileEnvironment) {
  std::vector<ExpectedRow> rows = ReadExpected();
  setenv("HWLOC_XMLFILE", TopologyPath("epyc-corona.xml").c_str(), 1);
  BindingRequest request;
  request.nproc = 4;
  BindingPlan plan = Plan(request);
  unsetenv("HWLOC_XMLFILE");
  EXPECT_FALSE(plan.this_system);
  ExpectMatchesRows(plan, PciRows(rows, "epyc-corona.xml", "1002"));
}

TEST_F(PlanTest, GpuMemoryNumaNodesNeverReceiveHostMemory) {
  // POWER9 + V100 exported with HWLOC_KEEP_NVIDIA_GPU_NUMA_NODES: nodes 250-255 are GPU HBM.
  BindingPlan plan = Plan(Request("nvidiagpunumanodes-kept.xml", BindMode::kNuma, 4));
  ASSERT_EQ(plan.workers.size(), 4u);
  std::set<std::string> mems;
  for (const WorkerBinding& worker : plan.workers) mems.insert(worker.mems);
  EXPECT_EQ(mems, (std::set<std::string>{"0", "8"}));
}

TEST_F(PlanTest, CpusAllowedRestrictsTheLocality) {
  std::vector<ExpectedRow> rows = ReadExpected();
  std::vector<ExpectedRow> pci = PciRows(rows, "g4dnmetal.xml", "10de");
  Bitmap locality = List(pci[0].at("locality_pus"));
  Bitmap allowed;  // the first and last PU of GPU 0's locality, plus one of GPU 7's
  hwloc_bitmap_set(allowed.get(), static_cast<unsigned>(hwloc_bitmap_first(locality.get())));
  hwloc_bitmap_set(allowed.get(), static_cast<unsigned>(hwloc_bitmap_last(locality.get())));
  hwloc_bitmap_set(allowed.get(), static_cast<unsigned>(hwloc_bitmap_first(List(pci[7].at("locality_pus")).get())));
  BindingRequest request = Request("g4dnmetal.xml", BindMode::kGpu, 1);
  request.cpus_allowed = allowed.List();
  BindingPlan plan = Plan(request);
  Bitmap expected;
  hwloc_bitmap_and(expected.get(), allowed.get(), locality.get());
  EXPECT_EQ(plan.workers[0].cpus, expected.List());
  EXPECT_EQ(plan.workers[0].cores, 2);
  EXPECT_EQ(plan.note, "");
}

}  // namespace
}  // namespace elastic
