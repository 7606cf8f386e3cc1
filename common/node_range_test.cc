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

TEST(NodeRangeTest, NodeMultipleTable) {
  struct Row {
    const char* name;
    const char* text;
    NodeRange nodes;
    bool ok;
    const char* error;  // the whole message when refused
  };
  const Row rows[] = {
      {"1 fits anything", "1", {1, 4}, true, ""},
      {"pairs in 2:4", "2", {2, 4}, true, ""},
      {"pairs in 1:3 (2)", "2", {1, 3}, true, ""},
      {"K = MAX", "3", {3, 3}, true, ""},
      {"zero", "0", {1, 4}, false, "--node-multiple: '0' is not an integer in [1, 100000]"},
      {"not a number", "two", {1, 4}, false,
       "--node-multiple: 'two' is not an integer in [1, 100000]"},
      {"above MAX", "8", {2, 4}, false, "--node-multiple: 8 is more than MAX of 2:4 nodes (1..4)"},
      {"no multiple in 3:3", "2", {3, 3}, false, "--node-multiple: 3:3 nodes holds no multiple of 2"},
      {"no multiple in 5:7", "4", {5, 7}, false, "--node-multiple: 5:7 nodes holds no multiple of 4"},
  };
  for (const Row& r : rows) {
    int k = 42;
    std::string err;
    EXPECT_EQ(ParseNodeMultiple("--node-multiple", r.text, r.nodes, &k, &err), r.ok) << r.name;
    if (r.ok) {
      EXPECT_EQ(k, std::stoi(r.text)) << r.name;
    } else {
      EXPECT_EQ(err, r.error) << r.name;
      EXPECT_EQ(k, 42) << r.name << ": left as it was";
    }
  }
}

}  // namespace
}  // namespace elastic
