// --duplicate-stdout-filters / --duplicate-stderr-filters (duplicate_filter.h).
#include "launcher/duplicate_filter.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace elastic {
namespace {

TEST(ParseDuplicateFilters, Table) {
  struct Row {
    const char* text;
    std::vector<std::string> filters;
  } rows[] = {
      {"", {}},
      {"loss", {"loss"}},
      {"loss,acc", {"loss", "acc"}},
      {"a,,b", {"a,b"}},          // ",," is a comma inside a filter
      {"a,,,b", {"a,", "b"}},
      {"loss,", {"loss", ""}},    // an empty filter: every line (torchrun's too)
      {",", {"", ""}},
  };
  for (const Row& row : rows) EXPECT_EQ(ParseDuplicateFilters(row.text), row.filters) << row.text;
}

TEST(MatchesAnyFilter, Table) {
  EXPECT_TRUE(MatchesAnyFilter("step 3 loss 0.5", {"acc", "loss"}));
  EXPECT_FALSE(MatchesAnyFilter("step 3 loss 0.5", {"acc"}));
  EXPECT_FALSE(MatchesAnyFilter("anything", {}));
  EXPECT_TRUE(MatchesAnyFilter("anything", {""}));
}

TEST(DuplicateSink, WritesTheMatchingLinesWithTheirPrefixNotMatchingOnThePrefix) {
  std::string path = testing::TempDir() + "/filtered_stdout.log";
  {
    UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644));
    ASSERT_TRUE(fd);
    DuplicateSink sink({"loss", "rank"}, std::move(fd));
    sink.Write("[rank0]: loss 1\n[rank0]: other\n[rank0]: loss 2\n", 9);
    sink.Write("[rank1]: no\n", 9);  // "rank" only in the prefix: not copied
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "[rank0]: loss 1\n[rank0]: loss 2\n");
  unlink(path.c_str());
}

}  // namespace
}  // namespace elastic
