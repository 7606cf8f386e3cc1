// Which GPUs a node may use: CUDA_VISIBLE_DEVICES / SLURM_STEP_GPUS mapped to
// bus ids through the PCI bus id order; and the errors for bad input.
#include <gtest/gtest.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "hwloc_binding/binding.h"
#include "hwloc_binding/expected_tsv.h"
#include "hwloc_binding/gpus.h"
#include "hwloc_binding/topology.h"

namespace elastic {
namespace {

using testing::ExpectedRow;
using testing::PciRows;
using testing::ReadExpected;
using testing::TopologyPath;

class VisibleGpusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("HWLOC_XMLFILE");
    pci_ = PciRows(ReadExpected(), "g4dnmetal.xml", "10de");  // 8 T4, bus ids 18:00.0 ... f5:00.0
    ASSERT_EQ(pci_.size(), 8u);
  }

  BindingRequest Request(const std::string& cuda, const std::string& step, int nproc,
                         const std::string& file = "g4dnmetal.xml") {
    BindingRequest request;
    request.topology_file = TopologyPath(file);
    // As elasticrun hands them over: parsed once (common/device_list.h).
    if (!cuda.empty())
      request.cuda_visible_devices = ParseGpuList(DeviceListKind::kCuda, "CUDA_VISIBLE_DEVICES", cuda);
    if (!step.empty())
      request.slurm_step_gpus = ParseGpuList(DeviceListKind::kSlurm, "SLURM_STEP_GPUS", step);
    request.nproc = nproc;
    return request;
  }

  // The bus ids local ranks get, in rank order.
  std::vector<std::string> BusIds(const BindingRequest& request) {
    BindingPlan plan;
    std::string err;
    EXPECT_TRUE(PlanBinding(request, &plan, &err)) << err;
    std::vector<std::string> ids;
    for (const WorkerBinding& worker : plan.workers) {
      ids.push_back(worker.gpu_busid.value_or("none"));
      // Each worker is bound to its own GPU's locality.
      for (const ExpectedRow& row : pci_) {
        if (row.at("pci_busid") == worker.gpu_busid) {
          Bitmap expected;
          std::string ignored;
          EXPECT_TRUE(Bitmap::ParseList("pus", row.at("locality_pus"), &expected, &ignored));
          EXPECT_EQ(worker.cpus, expected.List());
          EXPECT_EQ(worker.mems, row.at("numa_dram"));
        }
      }
    }
    return ids;
  }

  std::vector<std::string> Ranks(std::initializer_list<int> pci_ranks) {
    std::vector<std::string> ids;
    for (int rank : pci_ranks) ids.push_back(pci_[static_cast<size_t>(rank)].at("pci_busid"));
    return ids;
  }

  std::string Error(const BindingRequest& request) {
    BindingPlan plan;
    std::string err;
    EXPECT_FALSE(PlanBinding(request, &plan, &err));
    return err;
  }

  std::vector<ExpectedRow> pci_;
};

TEST_F(VisibleGpusTest, CudaVisibleDevicesIndexesFollowPciBusIdOrderInListOrder) {
  EXPECT_EQ(BusIds(Request("5,2", "", 2)), Ranks({5, 2}));
  EXPECT_EQ(BusIds(Request("7", "", 1)), Ranks({7}));
  EXPECT_EQ(BusIds(Request(" 0, 4 ", "", 2)), Ranks({0, 4}));
}

TEST_F(VisibleGpusTest, CountGpusCountsVisibleGpus) {
  int count = 0;
  std::string err;
  ASSERT_TRUE(CountGpus(Request("1,3,6", "", 1), &count, &err)) << err;
  EXPECT_EQ(count, 3);
  ASSERT_TRUE(CountGpus(Request("", "", 1), &count, &err)) << err;
  EXPECT_EQ(count, 8);
  ASSERT_TRUE(CountGpus(Request("NoDevFiles", "", 1), &count, &err)) << err;
  EXPECT_EQ(count, 0);
  ASSERT_TRUE(CountGpus(Request("2,-1,3", "", 1), &count, &err)) << err;  // CUDA stops at -1
  EXPECT_EQ(count, 1);
}

TEST_F(VisibleGpusTest, SlurmStepGpusWhenCudaVisibleDevicesIsUnset) {
  EXPECT_EQ(BusIds(Request("", "3,6", 2)), Ranks({3, 6}));
  EXPECT_EQ(BusIds(Request("", "4-6", 3)), Ranks({4, 5, 6}));
}

TEST_F(VisibleGpusTest, CudaVisibleDevicesNarrowsTheStepsGpus) {
  EXPECT_EQ(BusIds(Request("6", "3,6", 1)), Ranks({6}));
}

TEST_F(VisibleGpusTest, ConstrainDevicesRenumberingIndexesTheStepsGpus) {
  // Slurm with ConstrainDevices=yes: the step has GPUs 4 and 6, CUDA sees them as 0,1.
  EXPECT_EQ(BusIds(Request("0,1", "4,6", 2)), Ranks({4, 6}));
  EXPECT_EQ(BusIds(Request("1", "6,4", 1)), Ranks({6}));
}

TEST_F(VisibleGpusTest, GpuUuidsMatchNvmlUuidsInTheTopology) {
  Topology topology;
  std::string err;
  ASSERT_TRUE(topology.Load(TopologyPath("g4dnmetal.xml"), &err)) << err;
  std::vector<Gpu> gpus = FindGpus(topology);
  ASSERT_EQ(gpus.size(), 8u);
  std::string uuid3;
  for (hwloc_obj_t child = gpus[3].pci->io_first_child; child; child = child->next_sibling) {
    if (const char* uuid = hwloc_obj_get_info_by_name(child, "NVIDIAUUID")) uuid3 = uuid;
  }
  ASSERT_EQ(uuid3.rfind("GPU-", 0), 0u);
  EXPECT_EQ(BusIds(Request(uuid3, "", 1)), Ranks({3}));
  EXPECT_EQ(BusIds(Request(uuid3.substr(0, 12) + ",0", "", 2)), Ranks({3, 0}));  // unique prefix
}

TEST_F(VisibleGpusTest, UnknownUuidIsAClearError) {
  std::string err = Error(Request("GPU-ffffffff-0000", "", 1));
  EXPECT_NE(err.find("GPU-ffffffff-0000"), std::string::npos) << err;
  EXPECT_NE(err.find("integer"), std::string::npos) << err;
  // jrc0386 has no NVML OS devices: no UUIDs at all.
  err = Error(Request("GPU-4568d7d2", "", 1, "topo.jrc0386.xml"));
  EXPECT_NE(err.find("matches no GPU UUID"), std::string::npos) << err;
  err = Error(Request("MIG-1234", "", 1));
  EXPECT_NE(err.find("MIG"), std::string::npos) << err;
}

TEST_F(VisibleGpusTest, BadIndexesAreClearErrors) {
  std::string err = Error(Request("8", "", 1));
  EXPECT_NE(err.find("GPU index 8"), std::string::npos) << err;
  EXPECT_NE(err.find("8 NVIDIA GPU"), std::string::npos) << err;
  err = Error(Request("1,x", "", 1));
  EXPECT_NE(err.find("'x'"), std::string::npos) << err;
  err = Error(Request("2,2", "", 2));
  EXPECT_NE(err.find("twice"), std::string::npos) << err;
  err = Error(Request("", "0,9", 1));
  EXPECT_NE(err.find("SLURM_STEP_GPUS"), std::string::npos) << err;
  err = Error(Request("", "a", 1));
  EXPECT_NE(err.find("SLURM_STEP_GPUS"), std::string::npos) << err;
}

TEST_F(VisibleGpusTest, MoreWorkersThanVisibleGpusIsAnError) {
  BindingRequest gpu = Request("1,2", "", 3);
  gpu.mode = BindMode::kGpu;
  std::string err = Error(gpu);
  EXPECT_NE(err.find("3 workers"), std::string::npos) << err;
  EXPECT_NE(err.find("2 visible GPU"), std::string::npos) << err;
  BindingRequest request = Request("", "", 9);
  request.mode = BindMode::kGpuExclusive;
  EXPECT_NE(Error(request).find("8 visible GPU"), std::string::npos);
  request.mode = BindMode::kNuma;  // numa does not need a GPU per worker
  BindingPlan plan;
  std::string ignored;
  EXPECT_TRUE(PlanBinding(request, &plan, &ignored)) << ignored;
  EXPECT_FALSE(plan.workers[8].gpu_busid);
}

TEST_F(VisibleGpusTest, AutoModeWithMoreWorkersThanGpusBindsByNuma) {
  BindingPlan plan;
  std::string err;
  ASSERT_TRUE(PlanBinding(Request("1,2", "", 3), &plan, &err)) << err;
  EXPECT_EQ(plan.mode, BindMode::kNuma);
  EXPECT_NE(plan.note.find("3 workers but 2 visible GPU"), std::string::npos) << plan.note;
  ASSERT_EQ(plan.workers.size(), 3u);
  EXPECT_EQ(plan.workers[0].gpu_busid.value_or(""), pci_[1].at("pci_busid"));
  EXPECT_FALSE(plan.workers[2].gpu_busid);
  EXPECT_NE(plan.workers[0].mems, plan.workers[1].mems);  // g4dnmetal: 2 NUMA nodes
}

TEST_F(VisibleGpusTest, VisibleDevicesAreIgnoredWhereTheTopologyShowsNoGpu) {
  // A CPU node (or a container hiding PCI devices) with CUDA_VISIBLE_DEVICES set.
  BindingRequest request = Request("0,1", "", 2, "nvidiagpunumanodes-kept.xml");
  BindingPlan plan;
  std::string err;
  ASSERT_TRUE(PlanBinding(request, &plan, &err)) << err;
  EXPECT_EQ(plan.mode, BindMode::kNuma);
  EXPECT_NE(plan.note.find("ignoring CUDA_VISIBLE_DEVICES=0,1"), std::string::npos) << plan.note;
  int count = -1;
  ASSERT_TRUE(CountGpus(request, &count, &err)) << err;
  EXPECT_EQ(count, 0);
  // A vendor the node lacks is the same situation.
  request = Request("", "1", 1);
  request.gpu_vendor = "amd";
  ASSERT_TRUE(PlanBinding(request, &plan, &err)) << err;
  EXPECT_NE(plan.note.find("ignoring SLURM_STEP_GPUS=1"), std::string::npos) << plan.note;
}

TEST(GpuDiscoveryTest, OneGpuPerPciDeviceEvenWithManyOsDevices) {
  unsetenv("HWLOC_XMLFILE");
  std::vector<ExpectedRow> rows = ReadExpected();
  // tuo.CPX.xml: 24 rsmi partitions on 4 MI300A; ipa20.xml: 12 OS devices for 4 H100.
  for (const char* file : {"tuo.CPX.xml", "ipa20.xml", "g4dnmetal.xml"}) {
    SCOPED_TRACE(file);
    Topology topology;
    std::string err;
    ASSERT_TRUE(topology.Load(TopologyPath(file), &err)) << err;
    std::vector<Gpu> gpus = FindGpus(topology);
    ASSERT_TRUE(SelectVendor("", &gpus, &err)) << err;
    std::vector<ExpectedRow> pci = PciRows(rows, file, gpus.empty() ? "" : fmt::format("{:04x}", gpus[0].vendor));
    ASSERT_EQ(gpus.size(), pci.size());
    for (size_t i = 0; i < gpus.size(); ++i) EXPECT_EQ(gpus[i].busid, pci[i].at("pci_busid"));
  }
}

TEST(GpuDiscoveryTest, BmcDisplayChipsAndUnknownVendorsAreNotGpus) {
  unsetenv("HWLOC_XMLFILE");
  Topology topology;
  std::string err;
  ASSERT_TRUE(topology.Load(TopologyPath("nvidiagpunumanodes-kept.xml"), &err)) << err;
  EXPECT_TRUE(FindGpus(topology).empty());
  // Every file's GPU count equals its NVIDIA+AMD PCI rows (BMC VGAs are class 0300 too).
  std::vector<ExpectedRow> rows = ReadExpected();
  for (const std::string& file : testing::TopologyFiles()) {
    ASSERT_TRUE(topology.Load(TopologyPath(file), &err)) << err;
    EXPECT_EQ(FindGpus(topology).size(), PciRows(rows, file, "10de").size() + PciRows(rows, file, "1002").size())
        << file;
  }
}

TEST(BadInputTest, MissingTopologyFileIsNamed) {
  BindingRequest request;
  request.topology_file = "/nonexistent/dir/topo.xml";
  BindingPlan plan;
  std::string err;
  EXPECT_FALSE(PlanBinding(request, &plan, &err));
  EXPECT_NE(err.find("/nonexistent/dir/topo.xml"), std::string::npos) << err;
  EXPECT_NE(err.find("No such file"), std::string::npos) << err;
  int count = 0;
  EXPECT_FALSE(CountGpus(request, &count, &err));
  EXPECT_NE(err.find("/nonexistent/dir/topo.xml"), std::string::npos) << err;
}

TEST(BadInputTest, MissingHwlocXmlfileIsNamed) {
  setenv("HWLOC_XMLFILE", "/nonexistent/env.xml", 1);
  BindingRequest request;
  BindingPlan plan;
  std::string err;
  EXPECT_FALSE(PlanBinding(request, &plan, &err));
  unsetenv("HWLOC_XMLFILE");
  EXPECT_NE(err.find("/nonexistent/env.xml"), std::string::npos) << err;
}

TEST(BadInputTest, MalformedTopologyFileIsNamed) {
  std::string dir = ::testing::TempDir();
  for (const std::string& content : {std::string("this is not xml\n"), std::string("<?xml version=\"1.0\"?>\n<topology>\n<object type=\"Machine\""),
                                     std::string("<?xml version=\"1.0\"?>\n<html></html>\n"), std::string("")}) {
    std::string path = dir + "/malformed-" + std::to_string(getpid()) + ".xml";
    std::ofstream(path) << content;
    BindingRequest request;
    request.topology_file = path;
    BindingPlan plan;
    std::string err;
    EXPECT_FALSE(PlanBinding(request, &plan, &err)) << content;
    EXPECT_NE(err.find(path), std::string::npos) << err;
    std::remove(path.c_str());
  }
}

TEST(BadInputTest, UnknownVendorsAreRejected) {
  std::string err;
  BindingRequest request;
  request.topology_file = TopologyPath("chimera.xml");
  request.gpu_vendor = "intel";
  BindingPlan plan;
  EXPECT_FALSE(PlanBinding(request, &plan, &err));
  EXPECT_NE(err.find("'intel'"), std::string::npos) << err;
}

TEST(BadInputTest, BadCpusAllowedAndNproc) {
  BindingRequest request;
  request.topology_file = TopologyPath("chimera.xml");
  BindingPlan plan;
  std::string err;
  for (const char* bad : {"0-", "x", "1,,2", "-3", "0-3junk", "3-1", " 0"}) {
    request.cpus_allowed = bad;
    EXPECT_FALSE(PlanBinding(request, &plan, &err)) << bad;
    EXPECT_NE(err.find("--cpus-allowed"), std::string::npos) << err;
  }
  request.cpus_allowed = "";
  request.nproc = 0;
  EXPECT_FALSE(PlanBinding(request, &plan, &err));
  EXPECT_NE(err.find("at least 1"), std::string::npos) << err;
}

}  // namespace
}  // namespace elastic
