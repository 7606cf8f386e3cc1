#include "common/parse.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

TEST(ParseTest, IntAcceptsWholeNumbersInRange) {
  long long v = 0;
  EXPECT_TRUE(ParseInt("42", 0, 100, &v));
  EXPECT_EQ(v, 42);
  EXPECT_FALSE(ParseInt("101", 0, 100, &v));
  EXPECT_FALSE(ParseInt("4x", 0, 100, &v));
  EXPECT_FALSE(ParseInt("", 0, 100, &v));
  EXPECT_FALSE(ParseInt(" 4", 0, 100, &v));
}

TEST(ParseTest, NamedErrorQuotesOptionAndValue) {
  long long v = 0;
  std::string err;
  EXPECT_FALSE(ParseIntNamed("--max-restarts", "abc", 0, 1000, &v, &err));
  EXPECT_EQ(err, "--max-restarts: 'abc' is not an integer in [0, 1000]");
}

TEST(ParseTest, SecondsAcceptsFractions) {
  long long ms = 0;
  std::string err;
  EXPECT_TRUE(ParseSeconds("--shutdown-timeout", "0.1", &ms, &err));
  EXPECT_EQ(ms, 100);
  EXPECT_FALSE(ParseSeconds("--shutdown-timeout", "-1", &ms, &err));
  EXPECT_NE(err.find("'-1'"), std::string::npos);
}

TEST(ParseTest, KeyValuesSplitsPairsAndRejectsBareWords) {
  std::vector<std::pair<std::string, std::string>> kv;
  std::string err;
  ASSERT_TRUE(ParseKeyValues("--rdzv-conf", "a=1,b=x=y", &kv, &err));
  ASSERT_EQ(kv.size(), 2u);
  EXPECT_EQ(kv[1].second, "x=y");
  EXPECT_FALSE(ParseKeyValues("--rdzv-conf", "a=1,oops", &kv, &err));
  EXPECT_NE(err.find("'oops'"), std::string::npos);
}

TEST(ParseTest, SubmitLineIsElastic) {
  EXPECT_TRUE(SubmitLineIsElastic("srun --elastic x"));
  EXPECT_TRUE(SubmitLineIsElastic("srun -N2 --elastic=2:4 x"));
  EXPECT_FALSE(SubmitLineIsElastic("srun --elastic=No x"));
  EXPECT_FALSE(SubmitLineIsElastic("srun --elastic=2:4 --elastic=0 x"));  // the last wins
  EXPECT_FALSE(SubmitLineIsElastic("srun --elastic-join=5 x"));
  EXPECT_FALSE(SubmitLineIsElastic(""));
}

}  // namespace
}  // namespace elastic
