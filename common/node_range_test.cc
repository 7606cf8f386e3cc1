#include "common/node_range.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

TEST(NodeRangeTest, Table) {
  struct Row {
    const char* text;
    bool ok;
    int min, max;
  };
  const Row rows[] = {
      {"1", true, 1, 1},          {"4", true, 4, 4},        {"2:8", true, 2, 8},
      {"3:3", true, 3, 3},        {"100000", true, 100000, 100000},
      {"0", false, 0, 0},         {"0:1", false, 0, 0},     {"4:2", false, 0, 0},
      {"1:", false, 0, 0},        {":2", false, 0, 0},      {"1:2:3", false, 0, 0},
      {"", false, 0, 0},          {"x", false, 0, 0},       {"100001", false, 0, 0},
      {"-1:2", false, 0, 0},      {" 2", false, 0, 0},
  };
  for (const Row& row : rows) {
    NodeRange range{7, 9};
    std::string err;
    EXPECT_EQ(ParseNodeRange("--nnodes", row.text, &range, &err), row.ok) << row.text;
    if (!row.ok) {
      EXPECT_EQ(err, std::string("--nnodes: '") + row.text +
                         "' is not N or MIN:MAX (node counts 1..100000, MIN <= MAX)");
      EXPECT_EQ(range, (NodeRange{7, 9})) << row.text << ": left as it was";
      continue;
    }
    EXPECT_EQ(range, (NodeRange{row.min, row.max})) << row.text;
    NodeRange again;
    ASSERT_TRUE(ParseNodeRange("x", FormatNodeRange(range), &again, &err)) << err;
    EXPECT_EQ(again, range);
  }
}

}  // namespace
}  // namespace elastic
