#include "launcher/grow_rule.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

using std::chrono::seconds;

TEST(GrowRuleTest, Table) {
  const MonoClock::time_point t0{seconds(1000)};
  const GrowSettings s;  // backoff 10 s doubling to 300 s
  struct Row {
    const char* what;
    GrowView view;
    MonoClock::time_point now;
    GrowDecision want;
  };
  auto at = [&](int sec) { return t0 + seconds(sec); };
  const Row rows[] = {
      {"at MAX: nothing", {4, 4, 0, 0, 0, {}}, t0, {}},
      {"two missing, none queued: submit one", {2, 4, 0, 0, 0, {}}, t0, {1, 0, {}}},
      {"two missing, one queued: submit another", {2, 4, 1, 0, 0, {}}, t0, {1, 0, {}}},
      {"two missing, two queued: wait", {2, 4, 2, 0, 0, {}}, t0, {}},
      {"the world grew: cancel the surplus", {3, 4, 2, 0, 0, {}}, t0, {0, 1, {}}},
      {"at MAX with helpers queued: cancel them all", {4, 4, 2, 0, 0, {}}, t0, {0, 2, {}}},
      {"a helper started, not joined yet: it counts", {2, 4, 1, 1, 0, {}}, t0, {}},
      {"two started: none queued is right", {2, 4, 0, 2, 0, {}}, t0, {}},
      {"a world above MAX (spares) wants none", {5, 4, 1, 0, 0, {}}, t0, {0, 1, {}}},
      {"failed 5 s ago once: back off to 10 s", {2, 4, 0, 0, 1, t0}, at(5), {0, 0, at(10)}},
      {"failed 10 s ago once: try again", {2, 4, 0, 0, 1, t0}, at(10), {1, 0, {}}},
      {"failed three times: 40 s", {2, 4, 0, 0, 3, t0}, at(39), {0, 0, at(40)}},
      {"failed many times: at most 300 s", {2, 4, 0, 0, 30, t0}, at(299), {0, 0, at(300)}},
      {"backing off never holds a cancel back", {4, 4, 1, 0, 3, t0}, at(1), {0, 1, {}}},
  };
  for (const Row& row : rows) EXPECT_EQ(DecideGrow(row.view, row.now, s), row.want) << row.what;
}

TEST(GrowRuleTest, Backoff) {
  GrowSettings s;
  EXPECT_EQ(GrowBackoff(0, s), Millis(0));
  EXPECT_EQ(GrowBackoff(1, s), Millis(10000));
  EXPECT_EQ(GrowBackoff(2, s), Millis(20000));
  EXPECT_EQ(GrowBackoff(6, s), Millis(300000));
  EXPECT_EQ(GrowBackoff(1000, s), Millis(300000));
}

TEST(GrowRuleTest, SqueueLines) {
  std::vector<HelperJob> jobs;
  std::string err;
  ASSERT_TRUE(ParseHelperJobs("", &jobs, &err));
  EXPECT_TRUE(jobs.empty());
  ASSERT_TRUE(ParseHelperJobs("12 PD\n13 R\n  14  CG \n\n", &jobs, &err)) << err;
  EXPECT_EQ(jobs, (std::vector<HelperJob>{{"12", "PD"}, {"13", "R"}, {"14", "CG"}}));
  jobs = {{"1", "R"}};
  EXPECT_FALSE(ParseHelperJobs("12 PD\nslurm_load_jobs error: Unable to contact\n", &jobs, &err));
  EXPECT_EQ(err, "squeue: 'slurm_load_jobs error: Unable to contact' is not 'JOBID STATE'");
  EXPECT_EQ(jobs, (std::vector<HelperJob>{{"1", "R"}})) << "left as it was";
  EXPECT_FALSE(ParseHelperJobs("12\n", &jobs, &err));
  EXPECT_FALSE(ParseHelperJobs("12_3 PD\n", &jobs, &err));  // an array task is not ours
}

TEST(GrowRuleTest, SbatchParsable) {
  std::string id;
  EXPECT_TRUE(ParseSbatchJobId("4242\n", &id));
  EXPECT_EQ(id, "4242");
  EXPECT_TRUE(ParseSbatchJobId("77;cluster2\n", &id));
  EXPECT_EQ(id, "77");
  EXPECT_FALSE(ParseSbatchJobId("", &id));
  EXPECT_FALSE(ParseSbatchJobId("Submitted batch job 5\n", &id));
  EXPECT_FALSE(ParseSbatchJobId("5\n6\n", &id));
}

}  // namespace
}  // namespace elastic

#include "launcher/grow_keeper.h"

namespace elastic {
namespace {

// The helper job: the step's command under srun, in the main job's partition and
// account unless the user's OPTIONS name others; every word quoted for /bin/sh.
TEST(GrowKeeperTest, SbatchCommandLine) {
  GrowPlan plan;
  plan.job_id = "42";
  plan.partition = "main";
  plan.account = "proj";
  plan.srun_args = {"/usr/bin/python3", "train.py", "--name=it's"};
  EXPECT_EQ(GrowSbatchCommandArgs(plan),
            "'--parsable' '-N1' '--exclusive' '--job-name=elastic-grow-42' '--elastic-join=42' "
            "'--output=elastic-grow-42-%j.out' '--partition=main' '--account=proj' "
            "'--wrap=exec srun '\\''/usr/bin/python3'\\'' '\\''train.py'\\'' "
            "'\\''--name=it'\\''\\'\\'''\\''s'\\'''");
  plan.options.partition = "scavenge";
  plan.options.time = "30";
  plan.account = "";
  plan.srun_args = {"x"};
  EXPECT_EQ(GrowSbatchCommandArgs(plan),
            "'--parsable' '-N1' '--exclusive' '--job-name=elastic-grow-42' '--elastic-join=42' "
            "'--output=elastic-grow-42-%j.out' '--partition=scavenge' '--time=30' "
            "'--wrap=exec srun '\\''x'\\'''");
}

// sbatch (and the helper's srun) must not see the main step's Slurm variables.
TEST(GrowKeeperTest, EnvironmentWithoutTheStepsVariables) {
  EXPECT_EQ(GrowEnv({"PATH=/bin", "SLURM_CONF=/etc/slurm.conf", "SLURM_NTASKS=2", "SLURM_JOB_ID=9",
                     "SLURMD_NODENAME=n1", "PET_NNODES=2:4", "TORCHELASTIC_RUN_ID=9.0", "ELASTIC_SPANK_ARGV0=x",
                     "_SLURM_SPANK_OPTION_elastic_elastic_grow=on", "SPANK_X=1", "GLOO_SOCKET_IFNAME=eth0",
                     "ELASTIC_TORCH_NO_LIBUV=1", "ELASTIC_RDZV_TOKEN_FILE=/proc/self/fd/5"}),
            (std::vector<std::string>{"PATH=/bin", "SLURM_CONF=/etc/slurm.conf", "GLOO_SOCKET_IFNAME=eth0",
                                      "ELASTIC_TORCH_NO_LIBUV=1"}));
}

}  // namespace
}  // namespace elastic
