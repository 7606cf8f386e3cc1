// The task record (task_record.h): what a node's other tasks hand task 0's agent.
#include "launcher/task_record.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

TEST(TaskRecord, RoundTrips) {
  TaskRecord r;
  r.set = {{"CUDA_VISIBLE_DEVICES", "2"}, {"SLURM_PROCID", "6"}, {"SLURM_LOCALID", "2"}};
  r.cpus = "4-5,12";
  TaskRecord back;
  std::string err;
  ASSERT_TRUE(ParseTaskRecord(FormatTaskRecord(r), &back, &err)) << err;
  EXPECT_EQ(back.set, r.set);
  EXPECT_EQ(back.cpus, r.cpus);
}

TEST(TaskRecord, Table) {
  struct Row {
    const char* text;
    const char* error;  // nullptr: parses; else a part of the error
    const char* cvd;    // CUDA_VISIBLE_DEVICES when it parses ("-": not set)
    const char* cpus;
  } rows[] = {
      {"", nullptr, "-", ""},
      {"\n\n", nullptr, "-", ""},
      {"CUDA_VISIBLE_DEVICES=1\ncpus=0-3,8\n", nullptr, "1", "0-3,8"},
      {"CUDA_VISIBLE_DEVICES=\n", nullptr, "", ""},  // set and empty: no GPU for this task
      {"CUDA_VISIBLE_DEVICES=1\nCUDA_VISIBLE_DEVICES=2\n", nullptr, "2", ""},  // the last wins
      {"cpus=\n", nullptr, "-", ""},
      {"PATH=/bin\n", "'PATH=/bin'", nullptr, nullptr},
      {"CUDA_VISIBLE_DEVICES\n", "'CUDA_VISIBLE_DEVICES'", nullptr, nullptr},
      {"=1\n", "'=1'", nullptr, nullptr},
      {"cpus=0-a\n", "'0-a' is not a CPU list", nullptr, nullptr},
      {"cpus=3-1\n", "'3-1' is not a CPU list", nullptr, nullptr},
      {"SLURM_PROCID=1\x1b[2J\n", "'SLURM_PROCID=1\\x1b[2J'", nullptr, nullptr},
      {"SLURM_PROCID=1\r\n", "'SLURM_PROCID=1\\x0d'", nullptr, nullptr},
  };
  for (const Row& row : rows) {
    TaskRecord r;
    std::string err;
    bool ok = ParseTaskRecord(row.text, &r, &err);
    EXPECT_EQ(ok, row.error == nullptr) << row.text << ": " << err;
    if (!ok) {
      EXPECT_NE(err.find(row.error), std::string::npos) << err;
      continue;
    }
    auto it = r.set.find("CUDA_VISIBLE_DEVICES");
    EXPECT_EQ(it == r.set.end() ? "-" : it->second, row.cvd) << row.text;
    EXPECT_EQ(r.cpus, row.cpus) << row.text;
  }
}

}  // namespace
}  // namespace elastic
