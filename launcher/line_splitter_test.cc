#include "launcher/line_splitter.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

TEST(LineSplitterTest, PrefixesEveryWholeLine) {
  LineSplitter s("[rank3]: ");
  std::string out;
  s.Feed("a\nbb\n", &out);
  EXPECT_EQ(out, "[rank3]: a\n[rank3]: bb\n");
}

TEST(LineSplitterTest, HoldsPartialLineUntilNewline) {
  LineSplitter s("[rank0]: ");
  std::string out;
  s.Feed("hel", &out);
  EXPECT_EQ(out, "");
  s.Feed("lo\nwor", &out);
  EXPECT_EQ(out, "[rank0]: hello\n");
  s.Feed("ld\n", &out);
  EXPECT_EQ(out, "[rank0]: hello\n[rank0]: world\n");
}

TEST(LineSplitterTest, FinishEmitsLastLineWithoutNewline) {
  LineSplitter s("[rank1]: ");
  std::string out;
  s.Feed("x\ntail", &out);
  s.Finish(&out);
  EXPECT_EQ(out, "[rank1]: x\n[rank1]: tail\n");
  EXPECT_FALSE(s.has_partial());
}

TEST(LineSplitterTest, FinishWithNothingPendingAddsNothing) {
  LineSplitter s("p ");
  std::string out;
  s.Feed("x\n", &out);
  s.Finish(&out);
  EXPECT_EQ(out, "p x\n");
}

TEST(LineSplitterTest, EmptyLinesArePreserved) {
  LineSplitter s(">");
  std::string out;
  s.Feed("\n\n", &out);
  EXPECT_EQ(out, ">\n>\n");
}

TEST(LineSplitterTest, OneByteAtATime) {
  LineSplitter s("[r]: ");
  std::string out;
  for (char c : std::string("ab\ncd\n")) s.Feed(std::string_view(&c, 1), &out);
  EXPECT_EQ(out, "[r]: ab\n[r]: cd\n");
}

TEST(LineSplitterTest, OverlongLineIsCutIntoPrefixedPieces) {
  LineSplitter s("> ", 4);
  std::string out;
  s.Feed("abcdefghij\n", &out);
  EXPECT_EQ(out, "> abcd\n> efgh\n> ij\n");
}

TEST(LineSplitterTest, OverlongPartialAcrossFeeds) {
  LineSplitter s("> ", 4);
  std::string out;
  s.Feed("ab", &out);
  s.Feed("cdef", &out);
  EXPECT_EQ(out, "> abcd\n");
  s.Finish(&out);
  EXPECT_EQ(out, "> abcd\n> ef\n");
}

}  // namespace
}  // namespace elastic
