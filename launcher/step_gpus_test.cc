#include "launcher/step_gpus.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

// Moved from the plugin (spank_plugin/task_env_test.cc) with the rule: only
// elasticrun decides worker counts.
int Gpus(const EnvMap& env) {
  int n = -1;
  std::string err;
  EXPECT_TRUE(CountStepGpus(env, &n, &err)) << err;
  return n;
}

TEST(CountStepGpus, FromCudaVisibleDevicesElseSlurmStepGpusElseJobGpus) {
  EXPECT_EQ(Gpus({}), 0);
  EXPECT_EQ(Gpus({{"SLURM_JOB_GPUS", "0-2"}}), 3);
  EXPECT_EQ(Gpus({{"SLURM_STEP_GPUS", "4,5"}, {"SLURM_JOB_GPUS", "0-2"}}), 2);
  EXPECT_EQ(Gpus({{"SLURM_STEP_GPUS", "0-3"}}), 4);
  EXPECT_EQ(Gpus({{"SLURM_STEP_GPUS", "0-3"}, {"CUDA_VISIBLE_DEVICES", "GPU-aaaa-bbbb,GPU-cccc"}}), 2);
  EXPECT_EQ(Gpus({{"SLURM_STEP_GPUS", "0-3"}, {"CUDA_VISIBLE_DEVICES", "NoDevFiles"}}), 0);
  // CUDA: no GPU (it counted as one).
  EXPECT_EQ(Gpus({{"SLURM_STEP_GPUS", "0-3"}, {"CUDA_VISIBLE_DEVICES", "-1"}}), 0);
  // An empty variable is as good as unset (as the plugin read them).
  EXPECT_EQ(Gpus({{"CUDA_VISIBLE_DEVICES", ""}, {"SLURM_STEP_GPUS", ""}, {"SLURM_JOB_GPUS", "1"}}), 1);
}

TEST(CountStepGpus, BadListIsAnErrorNamingIt) {
  int n = 0;
  std::string err;
  EXPECT_FALSE(CountStepGpus({{"SLURM_STEP_GPUS", "0,x"}}, &n, &err));
  EXPECT_NE(err.find("SLURM_STEP_GPUS='0,x': 'x'"), std::string::npos) << err;
}

TEST(StepDefaultNproc, TheStepsGpusElseOne) {
  struct Row { EnvMap env; int nproc; };
  for (const Row& r : {Row{{}, 1}, Row{{{"CUDA_VISIBLE_DEVICES", "0,1,2,3"}}, 4},
                       Row{{{"SLURM_STEP_GPUS", "7"}}, 1}, Row{{{"CUDA_VISIBLE_DEVICES", "NoDevFiles"}}, 1},
                       Row{{{"SLURM_JOB_GPUS", "0,1"}}, 2}}) {
    int n = 0;
    std::string err;
    ASSERT_TRUE(StepDefaultNproc(r.env, &n, &err)) << err;
    EXPECT_EQ(n, r.nproc);
  }
}

}  // namespace
}  // namespace elastic
