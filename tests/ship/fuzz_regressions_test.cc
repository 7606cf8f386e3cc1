// Inputs the fuzz targets (fuzz/) found interesting, kept as unit tests. Each
// one's seed is also in fuzz/corpus/<target>/.
#include <gtest/gtest.h>

#include "common/parse.h"

namespace elastic {
namespace {

// fuzz/corpus/parse/leading_zeros: "000000000000000" is 0. Leading zeros are
// accepted (an option value "007" means 7); the fuzz invariant is that the
// canonical spelling parses back to the same value, not that the text does.
TEST(FuzzRegressionTest, ParseIntAcceptsLeadingZeros) {
  long long value = -1;
  ASSERT_TRUE(ParseInt("000000000000000", 0, 10, &value));
  EXPECT_EQ(value, 0);
  ASSERT_TRUE(ParseInt("007", 0, 10, &value));
  EXPECT_EQ(value, 7);
}

}  // namespace
}  // namespace elastic
