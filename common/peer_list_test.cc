// ELASTIC_RDZV_PEERS at the edge (common/peer_list.h): a table.
#include "common/peer_list.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

TEST(PeerListTest, ParsedAtTheEdge) {
  struct Row {
    const char* text;
    bool ok;
    std::vector<std::string> want;
    const char* error_has;
  };
  const Row rows[] = {
      {"", true, {}, ""},
      {"10.0.0.1", true, {"10.0.0.1"}, ""},
      {"10.0.0.1,10.0.0.2 10.0.0.3", true, {"10.0.0.1", "10.0.0.2", "10.0.0.3"}, ""},
      {"10.0.0.1,,10.0.0.1, ", true, {"10.0.0.1"}, ""},
      {"fd00::1,10.0.0.2", true, {"fd00::1", "10.0.0.2"}, ""},
      {"n1,10.0.0.2", false, {}, "'n1' is not a numeric"},
      {"10.0.0.1:29400", false, {}, "'10.0.0.1:29400'"},
      {"10.0.0.300", false, {}, "'10.0.0.300'"},
  };
  for (const Row& r : rows) {
    std::vector<std::string> out;
    std::string err;
    EXPECT_EQ(ParsePeerList(r.text, &out, &err), r.ok) << r.text;
    if (r.ok) EXPECT_EQ(out, r.want) << r.text;
    else EXPECT_NE(err.find(r.error_has), std::string::npos) << r.text << ": " << err;
  }
  std::string many;
  for (size_t i = 0; i <= kMaxPeers; ++i) many += "10.0.1." + std::to_string(i + 1) + ",";
  std::vector<std::string> out;
  std::string err;
  EXPECT_FALSE(ParsePeerList(many, &out, &err));
  EXPECT_NE(err.find("more than 64"), std::string::npos) << err;
}

TEST(PeerListTest, FormatReadsBack) {
  std::vector<std::string> in = {"10.0.0.1", "fd00::2"}, out;
  std::string err;
  ASSERT_TRUE(ParsePeerList(FormatPeerList(in), &out, &err)) << err;
  EXPECT_EQ(out, in);
}

}  // namespace
}  // namespace elastic
