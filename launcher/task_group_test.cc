// One task per GPU (task_group.h): the K/N value, the record format, and task 0
// meeting the other tasks of its node through the directory (real processes).
#include "launcher/task_group.h"
#include "launcher/launch_config.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

namespace elastic {
namespace {

TEST(ParseTaskGroup, Table) {
  struct Row {
    const char* text;
    int id, tasks;  // tasks 0 = an error
  } rows[] = {{"0/2", 0, 2}, {"3/4", 3, 4}, {"4/4", 0, 0}, {"0/1", 0, 0}, {"1", 0, 0},
              {"-1/4", 0, 0}, {"a/4", 0, 0}, {"1/", 0, 0}, {"", 0, 0}, {"1/4/5", 0, 0}};
  for (const Row& row : rows) {
    std::string err;
    auto group = ParseTaskGroup(row.text, &err);
    EXPECT_EQ(group.has_value(), row.tasks != 0) << row.text;
    if (group) {
      EXPECT_EQ(group->local_id, row.id) << row.text;
      EXPECT_EQ(group->tasks, row.tasks) << row.text;
    } else {
      EXPECT_NE(err.find(std::string("'") + row.text + "'"), std::string::npos) << err;
    }
  }
}

TEST(TaskRecord, TakesOnlyTheTaskVariablesAndTheAffinity) {
  TaskRecord r = CurrentTaskRecord({{"CUDA_VISIBLE_DEVICES", "1"}, {"HOME", "/root"}});
  EXPECT_EQ(r.set, (std::map<std::string, std::string>{{"CUDA_VISIBLE_DEVICES", "1"}}));
  EXPECT_FALSE(r.cpus.empty());
}

// Task 0 collects the records of tasks 1..2 (forked, as srun starts them), ends
// with code 7, and each task exits with 7; the directory is gone afterwards.
TEST(TaskGroup, TheOtherTasksReportAndExitWithTheAgentsCode) {
  std::string state = testing::TempDir() + "/task-group-XXXXXX";
  ASSERT_NE(mkdtemp(state.data()), nullptr);
  std::string err;
  std::string dir = TaskGroupDir(state, "42.0-100", &err);
  ASSERT_FALSE(dir.empty()) << err;
  std::vector<pid_t> pids;
  for (int k = 1; k <= 2; ++k) {
    pid_t pid = fork();
    if (pid == 0) {
      std::map<std::string, std::string> env = {{"CUDA_VISIBLE_DEVICES", std::to_string(k)},
                                                {"SLURM_LOCALID", std::to_string(k)}};
      _exit(RunTaskFollower(dir, TaskGroup{k, 3}, env, AgentSettings{}.task_agent_start_timeout_ms));
    }
    pids.push_back(pid);
  }
  std::vector<TaskRecord> records;
  ASSERT_TRUE(CollectTaskRecords(dir, TaskGroup{0, 3}, {{"CUDA_VISIBLE_DEVICES", "0"}}, 10000,
                                 &records, &err))
      << err;
  ASSERT_EQ(records.size(), 3u);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(records[k].set["CUDA_VISIBLE_DEVICES"], std::to_string(k));
  EXPECT_EQ(records[2].set["SLURM_LOCALID"], "2");
  FinishTaskGroup(dir, TaskGroup{0, 3}, 7);
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 7);
  }
  EXPECT_FALSE(std::filesystem::exists(dir));
  std::filesystem::remove_all(state);
}

// A task that never reports is named, within the timeout.
TEST(TaskGroup, AMissingTaskIsNamed) {
  std::string state = testing::TempDir() + "/task-group-XXXXXX";
  ASSERT_NE(mkdtemp(state.data()), nullptr);
  std::string err;
  std::string dir = TaskGroupDir(state, "42.1-100", &err);
  std::vector<TaskRecord> records;
  EXPECT_FALSE(CollectTaskRecords(dir, TaskGroup{0, 3}, {}, 200, &records, &err));
  EXPECT_NE(err.find("local tasks 1,2 of 3 did not report"), std::string::npos) << err;
  EXPECT_TRUE(TaskGroupDir(state, "../x", &err).empty());
  EXPECT_NE(err.find("'../x' is not a file name"), std::string::npos) << err;
  std::filesystem::remove_all(state);
}

}  // namespace
}  // namespace elastic
