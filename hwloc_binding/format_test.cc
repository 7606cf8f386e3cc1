#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>

#include "hwloc_binding/binding.h"
#include "hwloc_binding/expected_tsv.h"

namespace elastic {
namespace {

TEST(FormatTest, JsonIsAnArrayOfOneObjectPerLocalRank) {
  BindingPlan plan;
  plan.workers.push_back({0, "0000:18:00.0", "0-23,48-71", "0", 24});
  plan.workers.push_back({1, std::nullopt, "", "", 0});
  std::string text = PlanToJson(plan);
  EXPECT_EQ(text.rfind("[{\"local_rank\": 0, \"gpu\": \"0000:18:00.0\", \"cpus\": \"0-23,48-71\", \"mems\": \"0\"}", 0), 0u)
      << text;
  nlohmann::json json = nlohmann::json::parse(text);
  ASSERT_TRUE(json.is_array());
  ASSERT_EQ(json.size(), 2u);
  EXPECT_EQ(json[0]["local_rank"], 0);
  EXPECT_EQ(json[0]["gpu"], "0000:18:00.0");
  EXPECT_EQ(json[0]["cpus"], "0-23,48-71");
  EXPECT_EQ(json[0]["mems"], "0");
  EXPECT_TRUE(json[1]["gpu"].is_null());
  EXPECT_EQ(json[1].size(), 4u);
  EXPECT_EQ(PlanToJson(BindingPlan{}), "[]\n");
}

TEST(FormatTest, JsonOfARealPlanUsesRangeLists) {
  unsetenv("HWLOC_XMLFILE");
  BindingRequest request;
  request.topology_file = testing::TopologyPath("g4dnmetal.xml");
  request.nproc = 8;
  BindingPlan plan;
  std::string err;
  ASSERT_TRUE(PlanBinding(request, &plan, &err)) << err;
  nlohmann::json json = nlohmann::json::parse(PlanToJson(plan));
  ASSERT_EQ(json.size(), 8u);
  EXPECT_EQ(json[0]["gpu"], "0000:18:00.0");
  EXPECT_EQ(json[0]["cpus"], "0-23,48-71");  // the example is this machine
  EXPECT_EQ(json[0]["mems"], "0");
  EXPECT_EQ(json[7]["mems"], "1");
}

TEST(FormatTest, TableHasOneLinePerRankAndTheNote) {
  BindingPlan plan;
  plan.mode = BindMode::kGpuExclusive;
  plan.note = "GPU 0000:01:00.0 has no CPU locality";
  plan.this_system = false;
  plan.workers.push_back({0, "0000:01:00.0", "0-7", "0", 8});
  plan.workers.push_back({1, std::nullopt, "", "", 0});
  std::string table = PlanToTable(plan);
  EXPECT_NE(table.find("gpu-exclusive"), std::string::npos) << table;
  EXPECT_NE(table.find(plan.note), std::string::npos) << table;
  EXPECT_NE(table.find("not applied"), std::string::npos) << table;
  EXPECT_NE(table.find("0000:01:00.0"), std::string::npos) << table;
  EXPECT_NE(table.find("(unbound)"), std::string::npos) << table;
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 5);  // mode, note, header, 2 ranks
}

TEST(FormatTest, WorkerEnvironment) {
  WorkerBinding worker{0, "0000:18:00.0", "0-3", "0", 4};
  std::vector<std::string> env = {"PATH=/bin", "HWLOC_XMLFILE=/x.xml", "HWLOC_XMLFILEX=keep"};
  AdjustWorkerEnvironment(worker, &env);
  EXPECT_EQ(env, (std::vector<std::string>{"PATH=/bin", "HWLOC_XMLFILEX=keep", "OMP_NUM_THREADS=4",
                                           "CUDA_DEVICE_ORDER=PCI_BUS_ID"}));
  env = {"OMP_NUM_THREADS=2", "CUDA_DEVICE_ORDER=FASTEST_FIRST"};
  AdjustWorkerEnvironment(worker, &env);
  EXPECT_EQ(env, (std::vector<std::string>{"OMP_NUM_THREADS=2", "CUDA_DEVICE_ORDER=FASTEST_FIRST"}));
  env = {};
  AdjustWorkerEnvironment(WorkerBinding{}, &env);  // unbound, no GPU
  EXPECT_TRUE(env.empty());
}

TEST(OmpThreads, WorkersSharingABindingShareItsCores) {
  // --nproc-per-node=cpu on 2 NUMA domains of 6 cores, 12 workers: each worker
  // gets 1 thread, not 6 (12 x 6 threads on 12 cores before).
  BindingPlan plan;
  for (int i = 0; i < 12; ++i) {
    plan.workers.push_back(WorkerBinding{i, std::nullopt, i < 6 ? "0-5" : "6-11", i < 6 ? "0" : "1", 6});
  }
  for (size_t i = 0; i < 12; ++i) EXPECT_EQ(OmpThreads(plan, i), 1) << i;
  // One worker per GPU, each with a domain of its own: all its cores.
  plan.workers = {WorkerBinding{0, "0000:18:00.0", "0-5", "0", 6}, WorkerBinding{1, "0000:3b:00.0", "6-11", "1", 6}};
  EXPECT_EQ(OmpThreads(plan, 0), 6);
  EXPECT_EQ(OmpThreads(plan, 1), 6);
  // More workers than cores: still 1; unbound: 0 (the agent's default applies).
  plan.workers.assign(8, WorkerBinding{0, std::nullopt, "0-3", "0", 4});
  EXPECT_EQ(OmpThreads(plan, 7), 1);
  plan.workers = {WorkerBinding{}};
  EXPECT_EQ(OmpThreads(plan, 0), 0);
  EXPECT_EQ(OmpThreads(plan, 5), 0);
}

}  // namespace
}  // namespace elastic
