// --elastic-join's shell (join.cc) over a FakeSpank: srun asks Slurm about the
// target before it allocates, refuses with exit 6 or hands the plan to the tasks,
// and each slurmstepd starts elasticrun exactly as the manual scale-up recipe does.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "spank_plugin/join_target.h"
#include "spank_plugin/plugin.h"
#include "testing/spank_api_fake.h"

namespace elastic::spank {
namespace {

constexpr uint32_t kOwner = 1000;

TargetJob RunningTarget() {
  TargetJob job;
  job.found = true;
  job.job_id = 77;
  job.user_id = kOwner;
  job.state = TargetState::kRunning;
  job.state_name = "RUNNING";
  job.steps = {{0, "n3,n4", "", "srun -N2 --no-kill --elastic=2:4 python3 train.py"}};
  return job;
}

class JoinTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ResetState();
    api = FakeSpank{};
    api.uid = kOwner;
    api.jobs[77] = RunningTarget();
  }
  // srun: init, the options as typed, then init_post_opt (before allocation).
  int Srun(const std::vector<std::pair<OptionId, const char*>>& options) {
    api.context = Context::kLocal;
    EXPECT_EQ(Init(api, {"launcher=/usr/bin/elasticrun"}), 0);
    for (const auto& [id, value] : options) {
      if (OptionCallback(id, value, false) != 0) return -1;
    }
    return InitPostOpt(api, nodes);
  }
  std::string Errors() const {
    std::string all;
    for (const auto& e : api.errors) all += e + "\n";
    return all;
  }

  FakeSpank api;
  FakeNodes nodes;
};

TEST_F(JoinTest, SrunHandsTheTargetsRendezvousToTheTasks) {
  ASSERT_EQ(Srun({{OptionId::kJoin, "77"}}), 0) << Errors();
  EXPECT_EQ(api.jobs_loaded, std::vector<uint32_t>{77});
  EXPECT_EQ(api.env[kJoinEndpointVar], "n3:" + std::to_string(61000 + 77 * 32));
  EXPECT_EQ(api.env[kJoinRdzvIdVar], "77.0");
  EXPECT_EQ(api.env[kJoinNnodesVar], "2:4");  // the target's --elastic=2:4
  EXPECT_EQ(api.env[kJoinNodesVar], "n3,n4");
  ASSERT_EQ(api.infos.size(), 1u);
  EXPECT_NE(api.infos[0].find("joining job 77's step 77.0"), std::string::npos) << api.infos[0];
  EXPECT_EQ(api.srun_exit_code, -1);
  // srun that allocates runs init_post_opt in two contexts: Slurm is asked once.
  ASSERT_EQ(InitPostOpt(api, nodes), 0);
  EXPECT_EQ(api.jobs_loaded.size(), 1u);
  // --elastic-join alone makes the step elastic (no "needs --elastic").
  EXPECT_TRUE(ElasticActive(State().options, State().config));
}

TEST_F(JoinTest, TheJoinersOwnMinMaxWins) {
  ASSERT_EQ(Srun({{OptionId::kElastic, "3:6"}, {OptionId::kJoin, "77"}}), 0) << Errors();
  EXPECT_EQ(api.env[kJoinNnodesVar], "3:6");
}

TEST_F(JoinTest, RefusalsEndSrunWithExit4BeforeAnythingIsAllocated) {
  struct Row {
    const char* name;
    const char* job;
    std::function<void(FakeSpank&)> change;
    int exit_code;
    const char* message;
  } rows[] = {
      {"a job id Slurm does not know", "78", [](FakeSpank&) {}, kJoinRefusedExit,
       "--elastic-join=78: no such job"},
      {"a finished job", "77",
       [](FakeSpank& a) {
         a.jobs[77].state = TargetState::kFinished;
         a.jobs[77].state_name = "COMPLETED";
       },
       kJoinRefusedExit, "job 77 has finished (COMPLETED)"},
      {"another user's job", "77", [](FakeSpank& a) { a.uid = 1001; }, kJoinRefusedExit,
       "belongs to another user"},
      {"a job without an elastic step", "77",
       [](FakeSpank& a) { a.jobs[77].steps[0].submit_line = "srun -N2 hostname"; }, kJoinRefusedExit,
       "runs no elastic step"},
      {"Slurm cannot be asked: not a refusal", "77",
       [](FakeSpank& a) { a.load_job_error = "slurm_load_job(77): Unable to contact slurm controller"; },
       1, "cannot ask Slurm about job 77 (slurm_load_job(77): Unable to contact"},
  };
  for (const Row& row : rows) {
    SetUp();
    row.change(api);
    EXPECT_EQ(Srun({{OptionId::kJoin, row.job}}), -1) << row.name;
    EXPECT_EQ(api.srun_exit_code, row.exit_code) << row.name;
    ASSERT_EQ(api.errors.size(), 1u) << row.name << ": " << Errors();
    EXPECT_NE(api.errors[0].find(row.message), std::string::npos) << row.name << ": " << api.errors[0];
    EXPECT_FALSE(api.env.contains(kJoinEndpointVar)) << row.name;
  }
}

TEST_F(JoinTest, SrunRefusesARendezvousTypedByHandOrElasticOffWithoutAskingSlurm) {
  struct Row {
    OptionId id;
    const char* value;
    const char* message;
  } rows[] = {
      {OptionId::kElastic, "off", "--elastic-join=77 with --elastic=off"},
      {OptionId::kRdzvEndpoint, "n1:29400", "--elastic-join=77 with --elastic-rdzv-endpoint"},
      {OptionId::kRdzvId, "x", "with --elastic-rdzv-id"},
      {OptionId::kRdzvPort, "29400", "with --elastic-rdzv-port"},
  };
  for (const Row& row : rows) {
    SetUp();
    EXPECT_EQ(Srun({{OptionId::kJoin, "77"}, {row.id, row.value}}), -1) << row.value;
    ASSERT_EQ(api.errors.size(), 1u) << Errors();
    EXPECT_NE(api.errors[0].find(row.message), std::string::npos) << api.errors[0];
    EXPECT_TRUE(api.jobs_loaded.empty());
  }
}

TEST_F(JoinTest, ABadJobIdIsRefusedByTheOptionCallback) {
  for (const char* bad : {"abc", "0", "77.0", "-3", ""}) {
    SetUp();
    EXPECT_EQ(Srun({{OptionId::kJoin, bad}}), -1) << bad;
    EXPECT_NE(State().option_error.find("--elastic-join"), std::string::npos) << State().option_error;
    EXPECT_TRUE(api.jobs_loaded.empty());
  }
}

TEST_F(JoinTest, SbatchAndSallocOnlyCheckTheOptionTheirSrunsJoin) {
  api.context = Context::kAllocator;
  ASSERT_EQ(Init(api, {}), 0);
  ASSERT_EQ(OptionCallback(OptionId::kJoin, "77", false), 0);
  EXPECT_EQ(InitPostOpt(api, nodes), 0) << Errors();
  EXPECT_TRUE(api.jobs_loaded.empty());  // the job's sruns ask when they start
  // The job's sruns read it back through Slurm's environment form.
  std::vector<std::string> names = OptionEnvNames();
  EXPECT_NE(std::find(names.begin(), names.end(), "SLURM_SPANK__SLURM_SPANK_OPTION_elastic_elastic_join"),
            names.end());
}

class JoinTaskTest : public JoinTest {
 protected:
  void SetUp() override {
    JoinTest::SetUp();
    api.context = Context::kRemote;
    api.items = {{Item::kJobId, 90},         {Item::kStepId, 0},          {Item::kNodeId, 1},
                 {Item::kNnodes, 2},         {Item::kLocalTaskCount, 1},  {Item::kTotalTaskCount, 2},
                 {Item::kLocalTaskId, 0}};
    api.env = {{"SLURM_STEP_NODELIST", "n1,n2"}, {"SLURM_JOB_NODELIST", "n1,n2"},
               {"SLURM_CONF", "/nonexistent/slurm.conf"},
               {kJoinEndpointVar, "n3:63464"}, {kJoinRdzvIdVar, "77.0"},
               {kJoinNnodesVar, "2:4"}, {kJoinNodesVar, "n3,n4"}};
    nodes.node_addr = {{"n3", "10.200.0.13"}, {"n4", "10.200.0.14"}, {"n1", "10.200.0.11"}};
  }
  int Task(const std::vector<std::pair<OptionId, const char*>>& options) {
    EXPECT_EQ(Init(api, {"launcher=/usr/bin/elasticrun"}), 0);
    for (const auto& [id, value] : options) OptionCallback(id, value, true);
    EXPECT_EQ(RemoteInitPostOpt(api, nodes), 0);
    return TaskInit(api, nodes);
  }
};

TEST_F(JoinTaskTest, TheAgentsJoinLikeTheManualRecipeAsGuests) {
  ASSERT_EQ(Task({{OptionId::kJoin, "77"}}), 0) << Errors();
  EXPECT_EQ(api.env["PET_RDZV_ENDPOINT"], "10.200.0.13:63464");
  EXPECT_EQ(api.env["PET_RDZV_ID"], "77.0");
  EXPECT_EQ(api.env["PET_NNODES"], "2:4");
  EXPECT_EQ(api.env["PET_NODE_RANK"], "1");
  // No is_host (the endpoint is the target's node); guest=1: it ranks after the run's own.
  EXPECT_EQ(api.env["PET_RDZV_CONF"], "expected_nodes=2,guest=1");
  // After a failover the agents ask the target's nodes, not their own job's.
  EXPECT_EQ(api.env["ELASTIC_RDZV_PEERS"], "10.200.0.13,10.200.0.14");
  EXPECT_EQ(api.env["ELASTIC_SPANK_ARGV0"], "python3");
  EXPECT_FALSE(api.env.contains("SLURM_SPANK__SLURM_SPANK_OPTION_elastic_elastic_join"));
}

TEST_F(JoinTaskTest, TheUsersOwnRdzvConfAndMinMaxAreKept) {
  ASSERT_EQ(Task({{OptionId::kJoin, "77"}, {OptionId::kElastic, "1:3"},
                  {OptionId::kRdzvConf, "join_timeout=60,guest=0"}}),
            0)
      << Errors();
  EXPECT_EQ(api.env["PET_NNODES"], "1:3");
  EXPECT_EQ(api.env["PET_RDZV_CONF"], "expected_nodes=2,join_timeout=60,guest=0");
}

TEST_F(JoinTaskTest, ATaskWithoutThePlanFailsAndSaysWhy) {
  api.env.erase(kJoinEndpointVar);
  EXPECT_EQ(Task({{OptionId::kJoin, "77"}}), -1);
  EXPECT_EQ(api.exit_code, kTaskInitFailedExit);
  ASSERT_EQ(api.errors.size(), 1u);
  EXPECT_NE(api.errors[0].find("--elastic-join=77: the task has no join plan from srun"),
            std::string::npos)
      << api.errors[0];
  EXPECT_FALSE(api.env.contains("PET_RDZV_ENDPOINT"));
}

}  // namespace
}  // namespace elastic::spank

namespace elastic::spank {
namespace {

// --elastic-grow's second net: srun's exit cancels the job's helper jobs by name,
// whatever the agents did; nothing for a step without it, or before an allocation.
TEST(GrowExitTest, SrunCancelsTheHelperJobsByNameAtItsExit) {
  struct Row {
    const char* what;
    std::vector<std::pair<OptionId, const char*>> options;
    bool allocated;
    std::vector<std::string> cancelled;
  };
  const Row rows[] = {
      {"grow", {{OptionId::kElastic, "2:4"}, {OptionId::kGrow, nullptr}}, true, {"elastic-grow-4242"}},
      {"grow with options", {{OptionId::kElastic, "2:4"}, {OptionId::kGrow, "qos=low"}}, true, {"elastic-grow-4242"}},
      {"no grow", {{OptionId::kElastic, "2:4"}}, true, {}},
      {"refused before an allocation", {{OptionId::kElastic, "2:4"}, {OptionId::kGrow, nullptr}}, false, {}},
      {"--elastic=off", {{OptionId::kElastic, "off"}, {OptionId::kGrow, nullptr}}, true, {}},
  };
  for (const Row& row : rows) {
    ResetState();
    FakeSpank api;
    api.context = Context::kLocal;
    ASSERT_EQ(Init(api, {"launcher=/usr/bin/elasticrun"}), 0);
    for (const auto& [id, value] : row.options) ASSERT_EQ(OptionCallback(id, value, false), 0) << row.what;
    if (row.allocated) api.items[Item::kJobId] = 4242;
    EXPECT_EQ(SrunExit(api), 0) << row.what;
    EXPECT_EQ(api.cancelled, row.cancelled) << row.what;
  }
  // A failing scancel is told, with what to do by hand; srun's status is its own.
  ResetState();
  FakeSpank api;
  api.context = Context::kLocal;
  ASSERT_EQ(Init(api, {"launcher=/usr/bin/elasticrun"}), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, "2:4", false), 0);
  ASSERT_EQ(OptionCallback(OptionId::kGrow, nullptr, false), 0);
  api.items[Item::kJobId] = 7;
  api.cancel_error = "scancel not found on PATH";
  EXPECT_EQ(SrunExit(api), 0);
  ASSERT_EQ(api.errors.size(), 1u);
  EXPECT_EQ(api.errors[0], "--elastic-grow: cannot cancel the helper jobs named elastic-grow-7 (scancel not "
                           "found on PATH): scancel --name=elastic-grow-7 removes them");
}

}  // namespace
}  // namespace elastic::spank
