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

}  // namespace
}  // namespace elastic
