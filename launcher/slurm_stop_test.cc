#include "launcher/slurm_stop.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

constexpr int64_t kEnd = 1764692400;  // 2025-12-02 16:20:00 UTC
const std::string kCancelled = "cancelled by Slurm (SIGTERM): stopping the workers";
const std::string kTimeLimit =
    "time limit: the job reached its time limit (--time, it ended at 16:20:00 UTC) and Slurm "
    "stops the step (SIGTERM): stopping the workers";

struct Row {
  const char* what;
  std::optional<int64_t> end;
  int64_t now;
  const std::string& line;
};

TEST(SlurmStopLineTest, Table) {
  const Row rows[] = {
      {"no end time known (Slurm 22.05 without the plugin's variable)", std::nullopt, kEnd + 30, kCancelled},
      {"scancel long before the end", kEnd, kEnd - 3600, kCancelled},
      {"scancel just outside the skew allowance", kEnd, kEnd - 6, kCancelled},
      {"the controller's timer fires at the end", kEnd, kEnd, kTimeLimit},
      {"and usually some seconds after it", kEnd, kEnd + 40, kTimeLimit},
      {"OverTimeLimit: minutes after it", kEnd, kEnd + 600, kTimeLimit},
      {"this node's clock a little ahead", kEnd, kEnd - 5, kTimeLimit},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(SlurmStopLine(row.end, row.now), row.line) << row.what;
    EXPECT_EQ(AtJobEnd(row.end, row.now), &row.line == &kTimeLimit) << row.what;
  }
}

TEST(SlurmStopLineTest, ParsesOnlyPositiveUnixSeconds) {
  EXPECT_EQ(ParseJobEndTime("1764692400"), std::optional<int64_t>(kEnd));
  for (const char* bad : {"", "0", "-5", "12x", " 12", "1.5", "(null)", "99999999999999999999"})
    EXPECT_EQ(ParseJobEndTime(bad), std::nullopt) << bad;
}

}  // namespace
}  // namespace elastic
