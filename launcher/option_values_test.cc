#include "launcher/option_values.h"

#include <gtest/gtest.h>
#include <signal.h>

namespace elastic {
namespace {

TEST(OptionValuesTest, Bool) {
  bool b = false;
  std::string err;
  for (const char* yes : {"1", "true", "True", "YES", "on"}) {
    ASSERT_TRUE(ParseBool("x", yes, &b, &err)) << yes;
    EXPECT_TRUE(b);
  }
  for (const char* no : {"0", "false", "no", "OFF", ""}) {
    ASSERT_TRUE(ParseBool("x", no, &b, &err)) << no;
    EXPECT_FALSE(b);
  }
  EXPECT_FALSE(ParseBool("PET_STANDALONE", "2", &b, &err));
  EXPECT_EQ(err, "PET_STANDALONE: '2' is not a boolean (1/0, true/false)");
}

TEST(OptionValuesTest, StdSpec) {
  StdSpec spec;
  std::string err;
  ASSERT_TRUE(ParseStdSpec("--tee", "3", &spec, &err));
  EXPECT_EQ(spec.For(7), kStdBoth);
  ASSERT_TRUE(ParseStdSpec("--tee", "0:1,2:2", &spec, &err));
  EXPECT_EQ(spec.For(0), kStdOut);
  EXPECT_EQ(spec.For(1), kStdNone);
  EXPECT_EQ(spec.For(2), kStdErr);
  EXPECT_FALSE(ParseStdSpec("--tee", "0:4", &spec, &err));
  EXPECT_FALSE(ParseStdSpec("--tee", "", &spec, &err));
}

TEST(OptionValuesTest, RankListSignalsCpus) {
  std::vector<int> v;
  std::string err;
  ASSERT_TRUE(ParseRankList("f", "", &v, &err));
  EXPECT_TRUE(v.empty());
  ASSERT_TRUE(ParseRankList("f", "3,0", &v, &err));
  EXPECT_EQ(v, (std::vector<int>{3, 0}));
  EXPECT_FALSE(ParseRankList("f", "1,,2", &v, &err));
  ASSERT_TRUE(ParseSignals("s", "SIGTERM,INT,SIGUSR2", &v, &err));
  EXPECT_EQ(v, (std::vector<int>{SIGTERM, SIGINT, SIGUSR2}));
  EXPECT_FALSE(ParseSignals("s", "SIGKILL", &v, &err));
  EXPECT_TRUE(ParseCpuList("c", "0-3,8,10-11", &err));
  EXPECT_FALSE(ParseCpuList("c", "0-", &err));
  EXPECT_FALSE(ParseCpuList("c", "a", &err));
}

}  // namespace
}  // namespace elastic
