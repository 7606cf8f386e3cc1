// --elastic-join's discovery from Slurm's job data (issue 24), as a table: what
// Slurm says of the target job in, the join's plan or refusal out.
#include "spank_plugin/join_target.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "testing/spank_api_fake.h"

namespace elastic::spank {
namespace {

constexpr uint32_t kOwner = 1000;

TargetJob RunningJob() {
  TargetJob job;
  job.found = true;
  job.job_id = 77;
  job.user_id = kOwner;
  job.state = TargetState::kRunning;
  job.state_name = "RUNNING";
  job.steps = {{0, "n[3-4]", "", "srun -N2 --elastic=2:4 python3 train.py"}};
  return job;
}

struct Row {
  const char* name;
  std::function<void(TargetJob&)> change;
  uint32_t joiner = kOwner;
  JoinRefusal refusal = JoinRefusal::kNone;
  const char* in_message = "";  // the message (refusal) or port source (plan) says this
  std::function<void(const JoinPlan&)> also = {};
};

TEST(JoinTargetTest, PlansOrRefusesFromSlurmsJobData) {
  const Row rows[] = {
      {"a running elastic step: its first node, derived port and run id",
       [](TargetJob&) {}, kOwner, JoinRefusal::kNone, "derived from job 77 step 0",
       [](const JoinPlan& p) {
         EXPECT_EQ(p.first_node, "n3");
         EXPECT_EQ(p.port, 61000 + 77 * 32);
         EXPECT_EQ(p.rdzv_id, "77.0");
         EXPECT_EQ(p.step_id, 0u);
         EXPECT_EQ(p.nnodes, std::make_pair(2, 4));  // the target's --elastic=2:4
         EXPECT_EQ(p.nodelist, "n[3-4]");
       }},
      {"a bare --elastic: exactly the target step's nodes",
       [](TargetJob& j) { j.steps[0] = {0, "a1,a2,a3", "", "srun --elastic x"}; },
       kOwner, JoinRefusal::kNone, "derived",
       [](const JoinPlan& p) { EXPECT_EQ(p.nnodes, std::make_pair(3, 3)); }},
      {"job-level --elastic=2:8 reaches a plain srun step's MIN:MAX",
       [](TargetJob& j) {
         j.job_elastic = true;
         j.job_elastic_value = "2:8";
         j.steps[0].submit_line = "srun python3 train.py";
       },
       kOwner, JoinRefusal::kNone, "derived",
       [](const JoinPlan& p) { EXPECT_EQ(p.nnodes, std::make_pair(2, 8)); }},
      {"no such job", [](TargetJob& j) { j.found = false; }, kOwner, JoinRefusal::kNoSuchJob,
       "no such job"},
      {"a finished job", [](TargetJob& j) { j.state = TargetState::kFinished; j.state_name = "COMPLETED"; },
       kOwner, JoinRefusal::kFinished, "job 77 has finished (COMPLETED)"},
      {"a pending job", [](TargetJob& j) { j.state = TargetState::kPending; j.state_name = "PENDING"; },
       kOwner, JoinRefusal::kNotRunning, "job 77 is not running (PENDING)"},
      {"a suspended job", [](TargetJob& j) { j.state = TargetState::kSuspended; j.state_name = ""; },
       kOwner, JoinRefusal::kNotRunning, "(suspended)"},
      {"another user's job", [](TargetJob&) {}, 1001, JoinRefusal::kAnotherUser,
       "belongs to another user"},
      {"another user's finished job says finished, not who owns it",
       [](TargetJob& j) { j.state = TargetState::kFinished; }, 1001, JoinRefusal::kFinished, "finished"},
      {"a plain srun step", [](TargetJob& j) { j.steps[0].submit_line = "srun -N2 hostname"; },
       kOwner, JoinRefusal::kNotElastic, "runs no elastic step"},
      {"--elastic=off", [](TargetJob& j) { j.steps[0].submit_line = "srun --elastic=OFF -N2 x"; },
       kOwner, JoinRefusal::kNotElastic, "runs no elastic step"},
      {"no step running yet (a batch script before its srun)", [](TargetJob& j) { j.steps.clear(); },
       kOwner, JoinRefusal::kNotElastic, "runs no elastic step"},
      {"job-level --elastic: its plain srun steps are elastic",
       [](TargetJob& j) {
         j.job_elastic = true;
         j.steps = {{3, "m[1-2]", "", "srun python3 train.py"}};
       },
       kOwner, JoinRefusal::kNone, "derived from job 77 step 3",
       [](const JoinPlan& p) {
         EXPECT_EQ(p.first_node, "m1");
         EXPECT_EQ(p.rdzv_id, "77.3");
       }},
      {"job-level --elastic, a step with --elastic=off is not joined",
       [](TargetJob& j) {
         j.job_elastic = true;
         j.steps = {{0, "m1", "", "srun --elastic=off setup.sh"}, {1, "m[1-2]", "", "srun train"}};
       },
       kOwner, JoinRefusal::kNone, "step 1", [](const JoinPlan& p) { EXPECT_EQ(p.step_id, 1u); }},
      {"the lowest elastic step id of several",
       [](TargetJob& j) {
         j.steps = {{5, "b1", "", "srun --elastic x"}, {2, "a1", "", "srun --elastic=2:8 x"}};
       },
       kOwner, JoinRefusal::kNone, "step 2", [](const JoinPlan& p) { EXPECT_EQ(p.first_node, "a1"); }},
      {"the target's own --elastic-rdzv-endpoint: its host and port",
       [](TargetJob& j) {
         j.steps[0].submit_line = "srun --elastic=2:4 --elastic-rdzv-endpoint=10.1.2.3:29400 x";
       },
       kOwner, JoinRefusal::kNone, "--elastic-rdzv-endpoint",
       [](const JoinPlan& p) {
         EXPECT_EQ(p.first_node, "10.1.2.3");
         EXPECT_EQ(p.port, 29400);
       }},
      {"the target's --elastic-rdzv-endpoint without a port: the port as its plugin chose it",
       [](TargetJob& j) {
         j.steps[0].submit_line = "srun --elastic=2:4 --elastic-rdzv-endpoint=n9 x";
         j.steps[0].resv_ports = "12000";
       },
       kOwner, JoinRefusal::kNone, "SLURM_STEP_RESV_PORTS",
       [](const JoinPlan& p) {
         EXPECT_EQ(p.first_node, "n9");
         EXPECT_EQ(p.port, 12000);
       }},
      {"the target's --resv-ports", [](TargetJob& j) { j.steps[0].resv_ports = "12000-12001"; },
       kOwner, JoinRefusal::kNone, "SLURM_STEP_RESV_PORTS",
       [](const JoinPlan& p) { EXPECT_EQ(p.port, 12000); }},
      {"the target's own --elastic-rdzv-port and --elastic-rdzv-id",
       [](TargetJob& j) {
         j.steps[0].submit_line = "srun --elastic=2:4 --elastic-rdzv-port=5555 --elastic-rdzv-id=big x";
       },
       kOwner, JoinRefusal::kNone, "--elastic-rdzv-port",
       [](const JoinPlan& p) {
         EXPECT_EQ(p.port, 5555);
         EXPECT_EQ(p.rdzv_id, "big");
       }},
  };
  for (const Row& r : rows) {
    TargetJob job = RunningJob();
    r.change(job);
    FakeNodes nodes;
    JoinPlan plan;
    std::string err;
    JoinRefusal got = PlanJoin(job, r.joiner, PluginConfig{}, nodes, &plan, &err);
    EXPECT_EQ(got, r.refusal) << r.name << ": " << err;
    if (got == JoinRefusal::kNone) {
      EXPECT_NE(plan.port_source.find(r.in_message), std::string::npos) << r.name << ": " << plan.port_source;
      if (r.also) r.also(plan);
    } else {
      EXPECT_NE(err.find(r.in_message), std::string::npos) << r.name << ": " << err;
      EXPECT_NE(err.find("--elastic-join=77"), std::string::npos) << r.name << ": " << err;
    }
  }
}

}  // namespace
}  // namespace elastic::spank
