// Inputs the fuzz targets (fuzz/) found interesting, kept as unit tests. Each
// one's seed is also in fuzz/corpus/<target>/.
#include <gtest/gtest.h>

#include "common/parse.h"
#if __has_include("hwloc_binding/topology.h") && defined(ELASTIC_SHIP_HAVE_HWLOC)
#include "hwloc_binding/topology.h"
#define ELASTIC_SHIP_TEST_CPU_LISTS 1
#endif

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

#ifdef ELASTIC_SHIP_TEST_CPU_LISTS
// fuzz/corpus/gpu_lists/octal_reversed_range: "08-2,3,8" took 10 s (hwloc's list
// parser reads numbers with strtoul base 0: a leading 0 means octal, and "08"
// stops at the 8). Every other number of ours is decimal with leading zeros
// allowed (ParseInt above), so a CPU list must be too: "010" is CPU 10, not 8.
TEST(FuzzRegressionTest, CpuListNumbersAreDecimal) {
  Bitmap cpus;
  std::string err;
  ASSERT_TRUE(Bitmap::ParseList("--cpus-allowed", "010", &cpus, &err)) << err;
  EXPECT_EQ(cpus.List(), "10");
  ASSERT_TRUE(Bitmap::ParseList("--cpus-allowed", "0-07", &cpus, &err)) << err;
  EXPECT_EQ(cpus.List(), "0-7");
}

TEST(FuzzRegressionTest, CpuListWithReversedRangeIsRefused) {
  Bitmap cpus;
  std::string err;
  EXPECT_FALSE(Bitmap::ParseList("--cpus-allowed", "08-2,3,8", &cpus, &err));
  EXPECT_NE(err.find("08-2,3,8"), std::string::npos) << err;
  EXPECT_FALSE(Bitmap::ParseList("--cpus-allowed", "8-2", &cpus, &err));
}
#endif

}  // namespace
}  // namespace elastic
