// Stop on no progress: the progress file's parser and the rule, as tables.
#include "launcher/no_progress.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace elastic {
namespace {

TEST(NoProgress, ParseProgress) {
  struct Case {
    std::string text;
    std::optional<int64_t> want;
  };
  for (const Case& c : std::vector<Case>{
           {"1500", 1500}, {"1500\n", 1500}, {"  7 \r\n", 7}, {"0", 0},
           {"9223372036854775807", INT64_MAX},
           {"", std::nullopt}, {"\n", std::nullopt}, {"release", std::nullopt}, {"12abc", std::nullopt},
           {"-3", std::nullopt}, {"+3", std::nullopt}, {"1 2", std::nullopt}, {"0x10", std::nullopt},
           {"9223372036854775808", std::nullopt}, {"99999999999999999999", std::nullopt},
           {std::string("4\0", 2), std::nullopt}}) {
    EXPECT_EQ(ParseProgress(c.text), c.want) << c.text;
  }
}

// Each row: the limit, then the progress read at each failed round's end (-1: no known
// progress); `stops_at` is the failed round (1-based) that ends the job, 0 for none.
struct Row {
  const char* name;
  int limit;
  std::vector<int64_t> reads;
  int stops_at;
};

void PrintTo(const Row& row, std::ostream* os) { *os << row.name; }

class NoProgressTable : public ::testing::TestWithParam<Row> {};

TEST_P(NoProgressTable, Rounds) {
  const Row& row = GetParam();
  NoProgressState state;
  int stopped = 0;
  for (size_t i = 0; i < row.reads.size() && stopped == 0; ++i) {
    std::optional<int64_t> now;
    if (row.reads[i] >= 0) now = row.reads[i];
    if (NoteRoundProgress(row.limit, now, &state)) stopped = static_cast<int>(i) + 1;
  }
  EXPECT_EQ(stopped, row.stops_at);
}

INSTANTIATE_TEST_SUITE_P(
    StopOnNoProgress, NoProgressTable,
    ::testing::Values(
        // Crashes at the same step: the checkpoint stays at 3 after the first round.
        Row{"SameStepEveryTimeStopsAfterN", 2, {3, 3, 3, 3}, 3},
        Row{"LimitOneStopsAtTheFirstStall", 1, {3, 3}, 2},
        Row{"ProgressEveryRoundNeverStops", 2, {3, 6, 9, 12, 15}, 0},
        Row{"ProgressResetsTheCount", 2, {3, 3, 6, 6, 9, 9}, 0},
        Row{"NoFileCountsAsNoProgress", 2, {-1, -1}, 2},
        Row{"FirstKnownValueIsProgress", 2, {-1, 5, 5, 5}, 4},
        Row{"GoingBackIsNoProgress", 2, {10, 4, 8}, 3},
        Row{"UnreadableAfterProgressIsNoProgress", 2, {10, -1, -1}, 3},
        Row{"LimitZeroNever", 0, {3, 3, 3, 3, 3}, 0}));

}  // namespace
}  // namespace elastic
