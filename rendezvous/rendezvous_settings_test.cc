#include "rendezvous/rendezvous_settings.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

TEST(RendezvousSettingsTest, ConfKeysSetTheirFields) {
  RendezvousSettings s;
  std::string err;
  ASSERT_TRUE(ApplyRendezvousConf({{"join_timeout", "12"},
                                   {"last_call_timeout", "0.5"},
                                   {"heartbeat_interval", "1"},
                                   {"heartbeat_timeout", "4"},
                                   {"expected_nodes", "3"},
                                   {"is_host", "1"},
                                   {"token", "s3cret"}},
                                  &s, &err))
      << err;
  EXPECT_EQ(s.join_timeout_ms, 12'000);
  EXPECT_EQ(s.last_call_timeout_ms, 500);
  EXPECT_EQ(s.heartbeat_interval_ms, 1'000);
  EXPECT_EQ(s.heartbeat_timeout_ms, 4'000);
  EXPECT_EQ(s.expected_nodes, 3);
  EXPECT_EQ(s.host_mode, HostMode::kHost);
  EXPECT_EQ(s.token, "s3cret");
}

TEST(RendezvousSettingsTest, PreAuthenticationLimitsHaveDefaultsAndConfKeys) {
  RendezvousSettings s;
  EXPECT_EQ(s.auth_max_frame_bytes, 4096u);
  EXPECT_EQ(s.max_unauthenticated, 64);
  EXPECT_EQ(s.auth_timeout_ms, 10'000);
  std::string err;
  ASSERT_TRUE(ApplyRendezvousConf({{"auth_timeout", "2.5"},
                                   {"max_unauthenticated", "8"},
                                   {"auth_max_frame_bytes", "2048"}},
                                  &s, &err))
      << err;
  EXPECT_EQ(s.auth_timeout_ms, 2'500);
  EXPECT_EQ(s.max_unauthenticated, 8);
  EXPECT_EQ(s.auth_max_frame_bytes, 2048u);
  EXPECT_TRUE(ValidateRendezvousSettings(s, &err)) << err;
  s.auth_max_frame_bytes = s.max_frame_bytes + 1;
  EXPECT_FALSE(ValidateRendezvousSettings(s, &err));
  EXPECT_NE(err.find("auth_max_frame_bytes"), std::string::npos) << err;
  EXPECT_FALSE(ApplyRendezvousConf({{"max_unauthenticated", "0"}}, &s, &err));
}

// torchrun ignores --rdzv-conf keys it does not read (issue 22): so do we, with one
// warning naming every such key.
TEST(RendezvousSettingsTest, UnknownKeysAreIgnoredWithOneWarningNamingThem) {
  RendezvousSettings s;
  std::string err, warning;
  ASSERT_TRUE(ApplyRendezvousConf({{"join_timeuot", "5"}, {"rank", "0"}, {"last_call_timeout", "7"}}, &s,
                                  &err, &warning))
      << err;
  EXPECT_NE(warning.find("ignoring unknown keys 'join_timeuot', 'rank'"), std::string::npos) << warning;
  EXPECT_EQ(s.join_timeout_ms, RendezvousSettings{}.join_timeout_ms);
  EXPECT_EQ(s.last_call_timeout_ms, 7000);
  warning.clear();
  ASSERT_TRUE(ApplyRendezvousConf({{"join_timeout", "5"}}, &s, &err, &warning)) << err;
  EXPECT_EQ(warning, "");
}

// The keys torchrun 2.x reads (issue 22), as a table: same meaning where we have one.
TEST(RendezvousSettingsTest, TorchrunKeys) {
  struct Row {
    std::vector<std::pair<std::string, std::string>> conf;
    const char* err;  // nullptr: accepted
    int64_t heartbeat_interval_ms, heartbeat_timeout_ms, join_timeout_ms;
  } rows[] = {
      {{{"keep_alive_interval", "1"}}, nullptr, 1000, 10000, 600000},
      {{{"keep_alive_interval", "1"}, {"keep_alive_max_attempt", "4"}}, nullptr, 1000, 4000, 600000},
      {{{"keep_alive_max_attempt", "3"}}, nullptr, 2000, 6000, 600000},
      {{{"keep_alive_max_attempt", "3"}, {"heartbeat_timeout", "20"}}, nullptr, 2000, 20000, 600000},
      {{{"timeout", "90"}}, nullptr, 2000, 10000, 90000},
      {{{"timeout", "90"}, {"join_timeout", "30"}}, nullptr, 2000, 10000, 30000},
      {{{"read_timeout", "300"}, {"store_type", "tcp"}, {"use_libuv", "False"}}, nullptr, 2000, 10000, 600000},
      {{{"store_type", "file"}}, nullptr, 2000, 10000, 600000},
      {{{"read_timeout", "soon"}}, "--rdzv-conf read_timeout", 0, 0, 0},
      {{{"store_type", "etcd"}}, "store_type: 'etcd' is not tcp or file", 0, 0, 0},
      {{{"keep_alive_max_attempt", "0"}}, "keep_alive_max_attempt", 0, 0, 0},
      {{{"use_libuv", "maybe"}}, "use_libuv", 0, 0, 0},
  };
  for (const Row& row : rows) {
    RendezvousSettings s;
    std::string err, warning;
    bool ok = ApplyRendezvousConf(row.conf, &s, &err, &warning);
    EXPECT_EQ(ok, row.err == nullptr) << row.conf[0].first << ": " << err;
    EXPECT_EQ(warning, "") << warning;
    if (!ok) {
      EXPECT_NE(err.find(row.err), std::string::npos) << err;
      continue;
    }
    EXPECT_EQ(s.heartbeat_interval_ms, row.heartbeat_interval_ms) << row.conf[0].first;
    EXPECT_EQ(s.heartbeat_timeout_ms, row.heartbeat_timeout_ms) << row.conf[0].first;
    EXPECT_EQ(s.join_timeout_ms, row.join_timeout_ms) << row.conf[0].first;
  }
}

TEST(RendezvousSettingsTest, BadValueIsAnErrorNamingTheKey) {
  RendezvousSettings s;
  std::string err;
  EXPECT_FALSE(ApplyRendezvousConf({{"last_call_timeout", "soon"}}, &s, &err));
  EXPECT_NE(err.find("last_call_timeout"), std::string::npos) << err;
  EXPECT_FALSE(ApplyRendezvousConf({{"is_host", "maybe"}}, &s, &err));
  EXPECT_NE(err.find("is_host"), std::string::npos) << err;
}

TEST(RendezvousSettingsTest, ValidationRejectsInconsistentSettings) {
  RendezvousSettings s;
  std::string err;
  s.min_nodes = 3;
  s.max_nodes = 2;
  EXPECT_FALSE(ValidateRendezvousSettings(s, &err));
  s.max_nodes = 4;
  s.expected_nodes = 5;  // more nodes than MAX: one stands by as a spare
  EXPECT_TRUE(ValidateRendezvousSettings(s, &err)) << err;
  s.expected_nodes = 4;
  s.heartbeat_timeout_ms = s.heartbeat_interval_ms;
  EXPECT_FALSE(ValidateRendezvousSettings(s, &err));
  EXPECT_NE(err.find("heartbeat_timeout"), std::string::npos);
}

TEST(RendezvousSettingsTest, NodeMultipleMustFitMinMax) {
  struct Row {
    const char* name;
    int min, max, multiple;
    bool ok;
    const char* error;  // part of the message when refused
  };
  const Row rows[] = {
      {"no multiple: any size", 1, 4, 1, true, ""},
      {"pairs within 2:4", 2, 4, 2, true, ""},
      {"3:3 holds a multiple of 3", 3, 3, 3, true, ""},
      {"1:3 holds 2", 1, 3, 2, true, ""},
      {"zero", 1, 4, 0, false, "--node-multiple=0: must be 1..MAX (4"},
      {"above MAX", 2, 4, 8, false, "--node-multiple=8: must be 1..MAX (4"},
      {"3:3 holds no multiple of 2", 3, 3, 2, false, "no multiple of 2 within --nnodes 3:3"},
      {"5:7 holds no multiple of 4", 5, 7, 4, false, "no multiple of 4 within --nnodes 5:7"},
  };
  for (const Row& r : rows) {
    RendezvousSettings s;
    s.min_nodes = r.min;
    s.max_nodes = r.max;
    s.node_multiple = r.multiple;
    std::string err;
    EXPECT_EQ(ValidateRendezvousSettings(s, &err), r.ok) << r.name;
    if (!r.ok) {
      EXPECT_NE(err.find(r.error), std::string::npos) << r.name << ": " << err;
    }
  }
}

TEST(RendezvousSettingsTest, HelpListsEveryKey) {
  std::string help = RendezvousConfHelp();
  for (const char* key : {"join_timeout", "last_call_timeout", "close_timeout",
                          "heartbeat_interval", "heartbeat_timeout", "expected_nodes", "is_host",
                          "token", "munge"})
    EXPECT_NE(help.find(key), std::string::npos) << key;
}

}  // namespace
}  // namespace elastic
