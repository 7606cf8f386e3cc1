// The requeue decision and Slurm's variables as tables.
#include "launcher/requeue.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

using V = RequeueVerdict;
using R = EndReason;

TEST(RequeueTest, Decision) {
  const SlurmJobInfo batch{"42", true, 0};
  const SlurmJobInfo requeued_once{"42", true, 1};
  const SlurmJobInfo plain_srun{"42", false, 0};
  struct Row {
    const char* name;
    int max;
    JobEnd end;
    SlurmJobInfo job;
    V want;
    const char* message;  // a substring of the console line ("" = no line)
  };
  const Row rows[] = {
      {"off by default", 0, {R::kTooFewNodes, true}, batch, V::kOff, ""},
      {"fewer than MIN nodes: requeue 1 of 1", 1, {R::kTooFewNodes, true}, batch, V::kRequeue,
       "requeueing job 42 (requeue 1 of 1)"},
      {"restarts used up by node losses", 2, {R::kNodesLost, true}, batch, V::kRequeue,
       "requeueing job 42 (requeue 1 of 2)"},
      {"second run of a job requeued once, N=2", 2, {R::kTooFewNodes, true}, requeued_once,
       V::kRequeue, "requeueing job 42 (requeue 2 of 2)"},
      {"limit reached", 1, {R::kTooFewNodes, true}, requeued_once, V::kLimitReached,
       "not requeueing job 42: it was requeued 1 time(s), the most --requeue=1 allows"},
      {"another node acts for the job", 1, {R::kTooFewNodes, false}, batch, V::kNotThisNode, ""},
      {"a worker's failure: the same input fails again", 1, {R::kWorkerFailed, true}, batch,
       V::kNotThisEnd, ""},
      {"crash loop", 1, {R::kCrashLoop, true}, batch, V::kNotThisEnd, ""},
      {"bad input", 1, {R::kBadInput, true}, batch, V::kNotThisEnd, ""},
      {"no majority: the others may go on", 1, {R::kNoMajority, true}, batch, V::kNotThisEnd, ""},
      {"done", 1, {R::kDone, true}, batch, V::kNotThisEnd, ""},
      {"plain srun: says it does not apply", 1, {R::kTooFewNodes, true}, plain_srun, V::kNotBatch,
       "Slurm requeues batch jobs only (sbatch), and job 42 runs under plain srun"},
  };
  for (const Row& r : rows) {
    RequeueDecision d = DecideRequeue(r.max, r.end, r.job);
    EXPECT_EQ(d.verdict, r.want) << r.name;
    if (*r.message) {
      EXPECT_NE(d.message.find(r.message), std::string::npos) << r.name << ": " << d.message;
    } else {
      EXPECT_EQ(d.message, "") << r.name;
    }
  }
}

TEST(RequeueTest, SlurmJobInfoFromTheEnvironment) {
  struct Row {
    const char* name;
    EnvMap env;
    bool ok;
    SlurmJobInfo want;
    const char* err;
  };
  const Row rows[] = {
      {"outside Slurm", {}, true, {"", false, 0}, ""},
      {"plain srun", {{"SLURM_JOB_ID", "7"}}, true, {"7", false, 0}, ""},
      {"batch, never requeued", {{"SLURM_JOB_ID", "7"}, {"ENVIRONMENT", "BATCH"}}, true,
       {"7", true, 0}, ""},
      {"batch, requeued twice",
       {{"SLURM_JOB_ID", "7"}, {"ENVIRONMENT", "BATCH"}, {"SLURM_RESTART_COUNT", "2"}}, true,
       {"7", true, 2}, ""},
      {"ENVIRONMENT without a job", {{"ENVIRONMENT", "BATCH"}}, true, {"", false, 0}, ""},
      {"bad restart count", {{"SLURM_JOB_ID", "7"}, {"SLURM_RESTART_COUNT", "x"}}, false, {},
       "SLURM_RESTART_COUNT: 'x'"},
      {"negative restart count", {{"SLURM_JOB_ID", "7"}, {"SLURM_RESTART_COUNT", "-1"}}, false, {},
       "'-1'"},
      {"bad job id", {{"SLURM_JOB_ID", "7_1"}}, false, {}, "SLURM_JOB_ID='7_1'"},
  };
  for (const Row& r : rows) {
    SlurmJobInfo got;
    std::string err;
    ASSERT_EQ(ReadSlurmJobInfo(r.env, &got, &err), r.ok) << r.name << ": " << err;
    if (!r.ok) {
      EXPECT_NE(err.find(r.err), std::string::npos) << r.name << ": " << err;
      continue;
    }
    EXPECT_EQ(got.job_id, r.want.job_id) << r.name;
    EXPECT_EQ(got.batch, r.want.batch) << r.name;
    EXPECT_EQ(got.restart_count, r.want.restart_count) << r.name;
  }
}

}  // namespace
}  // namespace elastic
