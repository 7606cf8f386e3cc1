#include "common/log_escape.h"

#include <gtest/gtest.h>

#include <string>

namespace elastic {
namespace {

struct EscapeCase {
  std::string input;
  size_t max_bytes;
  std::string expected;
};

TEST(EscapeForLogTest, Table) {
  const EscapeCase cases[] = {
      {"hello", 200, "hello"},
      {"", 200, ""},
      {"a b~", 200, "a b~"},
      {"line\nforged: error: x", 200, "line\\x0aforged: error: x"},
      {"\r\t", 200, "\\x0d\\x09"},
      {"\x1b[31mred\x1b[0m", 200, "\\x1b[31mred\\x1b[0m"},
      {"back\\slash", 200, "back\\\\slash"},
      {std::string("nul\0byte", 8), 200, "nul\\x00byte"},
      {"\xff\x80", 200, "\\xff\\x80"},
      {"abcdef", 4, "abcd...(6 bytes)"},
      {"ab\ncd", 4, "ab...(5 bytes)"},  // never half an escape
      {"abcd", 4, "abcd"},
  };
  for (const auto& c : cases)
    EXPECT_EQ(EscapeForLog(c.input, c.max_bytes), c.expected) << "input: " << c.input;
}

TEST(EscapeForLogTest, OneMebibyteBecomesOneShortLine) {
  std::string big(1 << 20, '\n');
  std::string out = EscapeForLog(big);
  EXPECT_LE(out.size(), 200u + 32u);
  EXPECT_EQ(out.find('\n'), std::string::npos);
  EXPECT_NE(out.find("(1048576 bytes)"), std::string::npos);
}

}  // namespace
}  // namespace elastic
