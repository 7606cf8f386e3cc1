#include "common/endpoint.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

struct Row {
  const char* name;
  const char* text;
  bool ok;
  const char* host;    // when ok; else part of the error
  int port;            // when ok: -1 = none
  const char* printed; // when ok: FormatEndpoint of the result
};

TEST(EndpointTest, Table) {
  const Row rows[] = {
      {"host", "node1", true, "node1", -1, "node1"},
      {"host and port", "node1:29500", true, "node1", 29500, "node1:29500"},
      {"ipv4 and port", "10.0.0.1:7", true, "10.0.0.1", 7, "10.0.0.1:7"},
      {"fqdn with dash and underscore", "n-1_a.example.org", true, "n-1_a.example.org", -1,
       "n-1_a.example.org"},
      {"bracketed v6 and port", "[::1]:7", true, "::1", 7, "[::1]:7"},
      {"bracketed v6", "[fe80::1]", true, "fe80::1", -1, "[fe80::1]"},
      {"bracketed v6 with zone", "[fe80::1%eth0]:29400", true, "fe80::1%eth0", 29400,
       "[fe80::1%eth0]:29400"},
      {"bare v6 is an address, not a port", "fe80::1", true, "fe80::1", -1, "[fe80::1]"},
      {"bare v6 with embedded v4", "::ffff:10.0.0.1", true, "::ffff:10.0.0.1", -1,
       "[::ffff:10.0.0.1]"},
      {"highest port", "h:65535", true, "h", 65535, "h:65535"},
      {"empty", "", false, "--rdzv-endpoint: '' is not HOST[:PORT]", 0, nullptr},
      {"no host", ":29400", false, "(no host)", 0, nullptr},
      {"empty port", "node1:", false, "(empty port)", 0, nullptr},
      {"port zero", "node1:0", false, "port '0' is not in 1..65535", 0, nullptr},
      {"port too large", "host:99999", false, "port '99999'", 0, nullptr},
      {"port is a word", "node1:http", false, "port 'http'", 0, nullptr},
      {"unclosed bracket", "[::1", false, "unclosed '['", 0, nullptr},
      {"text after bracket", "[::1]x", false, "text after ']'", 0, nullptr},
      {"empty brackets", "[]:1", false, "not an IPv6 address", 0, nullptr},
      {"name in brackets", "[node1]:1", false, "not an IPv6 address", 0, nullptr},
      {"bare v6 with a word", "node1:2:3", false, "write IPv6 addresses as [ADDR]:PORT", 0, nullptr},
      {"space in host", "node 1:2", false, "letters, digits and .-_ only", 0, nullptr},
      {"comma in host", "a,b", false, "letters, digits and .-_ only", 0, nullptr},
      {"too long", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
       false, "host longer than 255", 0, nullptr},
  };
  for (const Row& row : rows) {
    Endpoint e{"stale", 1};
    std::string err;
    bool ok = ParseEndpoint("--rdzv-endpoint", row.text, &e, &err);
    EXPECT_EQ(ok, row.ok) << row.name << ": " << err;
    if (!row.ok) {
      EXPECT_NE(err.find(row.host), std::string::npos) << row.name << ": " << err;
      EXPECT_NE(err.find(std::string("'") + row.text + "'"), std::string::npos) << row.name << ": " << err;
      continue;
    }
    EXPECT_EQ(e.host, row.host) << row.name;
    EXPECT_EQ(e.port.value_or(-1), row.port) << row.name;
    EXPECT_EQ(FormatEndpoint(e), row.printed) << row.name;
  }
}

TEST(EndpointTest, DefaultPortAndHostPortShorthand) {
  Endpoint e;
  std::string err;
  ASSERT_TRUE(ParseEndpoint("x", "node1", &e, &err)) << err;
  EXPECT_EQ(e.PortOr(29400), 29400);
  ASSERT_TRUE(ParseEndpoint("x", "node1:1", &e, &err)) << err;
  EXPECT_EQ(e.PortOr(29400), 1);
  EXPECT_EQ(FormatEndpoint("10.0.0.2", 61000), "10.0.0.2:61000");
  EXPECT_EQ(FormatEndpoint("fd00::2", 61000), "[fd00::2]:61000");
}

// torchrun's "pick a free port" (--rdzv-endpoint=localhost:0) where the caller admits it.
TEST(EndpointTest, PortZeroOnlyWhereAdmitted) {
  Endpoint e;
  std::string err;
  ASSERT_TRUE(ParseEndpointOrFreePort("x", "localhost:0", &e, &err)) << err;
  EXPECT_EQ(e.port, 0);
  EXPECT_FALSE(ParseEndpointOrFreePort("x", "localhost:-1", &e, &err));
  EXPECT_NE(err.find("port '-1' is not in 0..65535"), std::string::npos) << err;
}

TEST(EndpointTest, ValidHostIsTheEndpointRule) {
  EXPECT_TRUE(IsValidHost("node1"));
  EXPECT_TRUE(IsValidHost("10.0.0.1"));
  EXPECT_TRUE(IsValidHost("fe80::1%eth0"));
  EXPECT_FALSE(IsValidHost(""));
  EXPECT_FALSE(IsValidHost("node1\nelasticrun: forged"));
  EXPECT_FALSE(IsValidHost("a b"));
  EXPECT_FALSE(IsValidHost("\x1b[2J"));
  EXPECT_FALSE(IsValidHost(std::string(256, 'a')));
}

}  // namespace
}  // namespace elastic
