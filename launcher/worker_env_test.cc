#include "launcher/worker_env.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

namespace elastic {
namespace {

class WorkerEnvTest : public ::testing::Test {
 protected:
  WorkerEnvTest() {
    config.spec.nproc = 2;
    config.spec.rdzv.max_restarts = 3;
    config.spec.rdzv.run_id = "job1";
    round.round = 2;
    round.group_rank = 1;
    round.group_world_size = 2;
    round.rank_offset = 4;
    round.world_size = 6;
    round.store_addr = "10.0.0.1";
    round.store_port = 29400;
  }
  EnvMap Build(int local_rank, int cores = 0) {
    WorkerEnvInput in;
    in.base = &base;
    in.config = &config;
    in.round = round;
    in.local_rank = local_rank;
    in.error_file = "/logs/attempt_2/1/error.json";
    in.bound_cores = cores;
    in.python_shim_dir = shim_dir;
    in.timer_file = timer_file;
    return BuildWorkerEnv(in);
  }
  EnvMap base{{"PATH", "/bin"}, {"HOME", "/root"}};
  LaunchConfig config;
  RoundInfo round;
  std::string shim_dir;
  std::string timer_file;
};

TEST_F(WorkerEnvTest, TorchrunContract) {
  EnvMap env = Build(1);
  EnvMap expected = {
      {"PATH", "/bin"}, {"HOME", "/root"},
      {"RANK", "5"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "6"}, {"LOCAL_WORLD_SIZE", "2"},
      {"GROUP_RANK", "1"}, {"GROUP_WORLD_SIZE", "2"},
      {"ROLE_NAME", "default"}, {"ROLE_RANK", "5"}, {"ROLE_WORLD_SIZE", "6"},
      {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29400"},
      {"TORCHELASTIC_RESTART_COUNT", "2"}, {"TORCHELASTIC_MAX_RESTARTS", "3"},
      {"TORCHELASTIC_RUN_ID", "job1"}, {"TORCHELASTIC_USE_AGENT_STORE", "False"},
      {"TORCHELASTIC_ERROR_FILE", "/logs/attempt_2/1/error.json"},
      {"TORCHELASTIC_SIGNALS_TO_HANDLE", "SIGTERM,SIGINT,SIGHUP,SIGQUIT"},
      {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"}, {"NCCL_ASYNC_ERROR_HANDLING", "1"},
      {"OMP_NUM_THREADS", "1"}, {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"},
      {"PYTHONFAULTHANDLER", "1"}, {"PYTHONUNBUFFERED", "1"}};
  EXPECT_EQ(env, expected);
}

TEST_F(WorkerEnvTest, FaultHandlerAndTimerFile) {
  EXPECT_EQ(Build(0)["PYTHONFAULTHANDLER"], "1");
  EXPECT_EQ(Build(0).count("TORCHELASTIC_TIMER_FILE"), 0u);
  base["PYTHONFAULTHANDLER"] = "";  // the user's choice (off) is kept
  timer_file = "/tmp/elasticrun-timer-x/watchdog_timer";
  EnvMap env = Build(0);
  EXPECT_EQ(env["PYTHONFAULTHANDLER"], "");
  EXPECT_EQ(env["TORCHELASTIC_TIMER_FILE"], "/tmp/elasticrun-timer-x/watchdog_timer");
}

// torchrun runs every program as `python -u`: a console script (no .py, executed
// directly here) must not buffer its output until exit either (issue 22).
TEST_F(WorkerEnvTest, UnbufferedPythonUnlessTheUserSaysOtherwise) {
  EXPECT_EQ(Build(0)["PYTHONUNBUFFERED"], "1");
  base["PYTHONUNBUFFERED"] = "";
  EXPECT_EQ(Build(0)["PYTHONUNBUFFERED"], "");
}

// One task per GPU: worker 1 gets task 1's GPU and ids, not the agent's (task 0's),
// and a GPU variable task 1 lacks is unset.
TEST_F(WorkerEnvTest, OneTaskPerGpuGivesEachWorkerItsTasksVariables) {
  base["CUDA_VISIBLE_DEVICES"] = "0";
  base["ROCR_VISIBLE_DEVICES"] = "0";
  base["SLURM_PROCID"] = "2";
  base["SLURM_LOCALID"] = "0";
  TaskRecord task;
  task.set = {{"CUDA_VISIBLE_DEVICES", "1"}, {"SLURM_PROCID", "3"}, {"SLURM_LOCALID", "1"}};
  WorkerEnvInput in;
  in.base = &base;
  in.config = &config;
  in.round = round;
  in.local_rank = 1;
  in.task = &task;
  EnvMap env = BuildWorkerEnv(in);
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "1");
  EXPECT_EQ(env["SLURM_PROCID"], "3");
  EXPECT_EQ(env["SLURM_LOCALID"], "1");
  EXPECT_EQ(env["LOCAL_RANK"], "1");
  EXPECT_EQ(env.count("ROCR_VISIBLE_DEVICES"), 0u);
  EXPECT_EQ(env["PATH"], "/bin");
}

TEST_F(WorkerEnvTest, AgentStoreIsTrue) {
  round.use_agent_store = true;
  EXPECT_EQ(Build(0)["TORCHELASTIC_USE_AGENT_STORE"], "True");
}

TEST_F(WorkerEnvTest, RemovesSpankPetAndHwlocVariables) {
  base["ELASTIC_SPANK_ARGV0"] = "train.py";
  base["PET_NPROC_PER_NODE"] = "4";
  base["HWLOC_XMLFILE"] = "/x.xml";
  base["PETER"] = "kept";
  EnvMap env = Build(0);
  EXPECT_EQ(env.count("ELASTIC_SPANK_ARGV0"), 0u);
  EXPECT_EQ(env.count("PET_NPROC_PER_NODE"), 0u);
  EXPECT_EQ(env.count("HWLOC_XMLFILE"), 0u);
  EXPECT_EQ(env["PETER"], "kept");
}

TEST_F(WorkerEnvTest, ShimDirGoesFirstOnPythonPath) {
  EXPECT_EQ(Build(0).count("PYTHONPATH"), 0u);
  shim_dir = "/usr/share/slurm-elastic/python";
  EXPECT_EQ(Build(0)["PYTHONPATH"], "/usr/share/slurm-elastic/python");
  base["PYTHONPATH"] = "/home/u/lib";
  EXPECT_EQ(Build(0)["PYTHONPATH"], "/usr/share/slurm-elastic/python:/home/u/lib");
}

TEST(TorchShimDirTest, OnlyWithTheVariableAndOnlyWhereTheShimIs) {
  char tmpl[] = "/tmp/shimtest.XXXXXX";
  std::string root = ::mkdtemp(tmpl);
  std::string exe = root + "/launcher/elasticrun";
  std::string warning;
  EnvMap env;
  EXPECT_EQ(TorchShimDir(env, exe, &warning), "");
  env["ELASTIC_TORCH_NO_LIBUV"] = "1";
  EXPECT_EQ(TorchShimDir(env, exe, &warning), "");
  EXPECT_NE(warning.find("not installed next to " + exe), std::string::npos) << warning;
  std::filesystem::create_directories(root + "/launcher/python");
  std::ofstream(root + "/launcher/python/sitecustomize.py") << "\n";
  warning.clear();
  EXPECT_EQ(TorchShimDir(env, exe, &warning), root + "/launcher/python");
  EXPECT_EQ(warning, "");
  env["ELASTIC_TORCH_NO_LIBUV"] = "0";
  EXPECT_EQ(TorchShimDir(env, exe, &warning), "");
  std::filesystem::remove_all(root);
}

TEST_F(WorkerEnvTest, InheritedValuesWin) {
  base["OMP_NUM_THREADS"] = "8";
  base["CUDA_DEVICE_ORDER"] = "FASTEST_FIRST";
  base["NCCL_ASYNC_ERROR_HANDLING"] = "0";
  EnvMap env = Build(0, 12);
  EXPECT_EQ(env["OMP_NUM_THREADS"], "8");
  EXPECT_EQ(env["CUDA_DEVICE_ORDER"], "FASTEST_FIRST");
  EXPECT_EQ(env["NCCL_ASYNC_ERROR_HANDLING"], "0");
  EXPECT_EQ(env["TORCH_NCCL_ASYNC_ERROR_HANDLING"], "0");
}

TEST_F(WorkerEnvTest, OmpThreads) {
  EXPECT_EQ(Build(0, 12)["OMP_NUM_THREADS"], "12");  // bound: its cores
  config.spec.nproc = 1;
  EXPECT_EQ(Build(0).count("OMP_NUM_THREADS"), 0u);  // one unbound worker: untouched
}

TEST_F(WorkerEnvTest, CudaVisibleDevicesKeptAsGiven) {
  base["CUDA_VISIBLE_DEVICES"] = "2,3";
  EXPECT_EQ(Build(1)["CUDA_VISIBLE_DEVICES"], "2,3");
}

TEST_F(WorkerEnvTest, VirtualLocalRank) {
  config.spec.virtual_local_rank = true;
  base["CUDA_VISIBLE_DEVICES"] = "2,3";
  EnvMap env = Build(1);
  EXPECT_EQ(env["LOCAL_RANK"], "0");
  EXPECT_EQ(env["RANK"], "5");
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "3");
}

TEST(EnvToStringsTest, KeyEqualsValue) {
  EXPECT_EQ(EnvToStrings({{"A", "1"}, {"B", "x=y"}}), (std::vector<std::string>{"A=1", "B=x=y"}));
}

}  // namespace
}  // namespace elastic
