// Regime records (regime_record.h): the record's format as a table, the latest
// regime, the directory's safety checks, and the liveness check on real sockets.
#include "rendezvous/regime_record.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "common/net.h"
#include "rendezvous/failover_rules.h"

namespace elastic {
namespace {

RoundInfo Round(uint64_t number, std::vector<Successor> successors) {
  RoundInfo r;
  r.round = number;
  r.group_world_size = static_cast<int>(successors.size());
  r.successors = std::move(successors);
  r.restarts_used = 1;
  return r;
}

TEST(RegimeRecordTest, RecordRoundTripsTheSuccessors) {
  RoundInfo in = Round(4, {{"n0", "10.0.0.1", 29400}, {"n1", "10.0.0.2", 40001}});
  in.group_rank = 1;
  RoundInfo out;
  std::string err;
  ASSERT_TRUE(DecodeRegimeRecord(EncodeRegimeRecord(in), &out, &err)) << err;
  EXPECT_EQ(out.round, 4u);
  EXPECT_EQ(out.group_rank, -1);  // a record makes nobody a member
  EXPECT_EQ(out.restarts_used, 1);
  ASSERT_EQ(out.successors.size(), 2u);
  EXPECT_EQ(out.successors[1].addr, "10.0.0.2");
  EXPECT_EQ(out.successors[1].port, 40001);
}

TEST(RegimeRecordTest, BadRecordsAreRefusedWithAReason) {
  struct Row {
    const char* name;
    std::string text;
    const char* error_has;
  };
  const Row rows[] = {
      {"not JSON", "{", ""},
      {"no type", R"({"standby": {}})", "type"},
      {"another message", R"({"type": "heartbeat"})", "no regime record"},
      {"waiting without a round", R"({"type": "waiting", "message": "x"})", "no regime record"},
      {"round out of range", R"({"type": "waiting", "standby": {"round": -1, "successors": []}})",
       "round"},
      {"port out of range",
       R"({"type": "waiting", "standby": {"round": 1, "successors": [{"name": "a", "addr": "1.2.3.4", "port": 70000}]}})",
       "port"},
  };
  for (const Row& r : rows) {
    RoundInfo out;
    std::string err;
    EXPECT_FALSE(DecodeRegimeRecord(r.text, &out, &err)) << r.name;
    EXPECT_NE(err.find(r.error_has), std::string::npos) << r.name << ": " << err;
  }
}

TEST(RegimeRecordTest, LatestRegimeIsTheHighestRoundThatDecodes) {
  std::vector<std::string> records = {
      EncodeRegimeRecord(Round(1, {{"n0", "127.0.0.1", 1}})),
      "garbage",
      EncodeRegimeRecord(Round(3, {{"n1", "127.0.0.1", 3}})),
      EncodeRegimeRecord(Round(2, {{"n2", "127.0.0.1", 2}})),
      EncodeRegimeRecord(Round(9, {})),  // no successors: nobody to walk
  };
  std::optional<RoundInfo> latest = LatestRegime(records);
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->round, 3u);
  EXPECT_FALSE(LatestRegime({}));
  EXPECT_FALSE(LatestRegime({"garbage"}));
}

TEST(RegimeRecordTest, KeyIsPerRunAndEndpoint) {
  EXPECT_EQ(RegimeKey("run", "h:1"), RegimeKey("run", "h:1"));
  EXPECT_NE(RegimeKey("run", "h:1"), RegimeKey("run", "h:2"));
  EXPECT_NE(RegimeKey("run", "h:1"), RegimeKey("other", "h:1"));
}

// A restarted agent's fence (FailoverRendezvous::Rejoin: only_ahead_of = recorded round - 1):
// it joins only a host that completed the recorded round or a later one.
TEST(RegimeRecordTest, RejoinFenceRefusesAFreshHost) {
  struct Row {
    const char* name;
    int64_t recorded;
    int64_t host_last_completed;
    bool joins;
  };
  const Row rows[] = {
      {"fresh host (no round yet) vs a regime of round 0", 0, -1, false},
      {"fresh host vs a regime of round 3", 3, -1, false},
      {"the regime's host running the recorded round", 3, 3, true},
      {"the regime's host past it", 3, 5, true},
      {"a former host stuck before the recorded round", 3, 2, false},
  };
  for (const Row& r : rows)
    EXPECT_EQ(ShouldYield(r.recorded - 1, r.host_last_completed), r.joins) << r.name;
}

class RegimeFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/regime-record-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(RegimeFilesTest, WrittenRecordsAreReadBackPerKey) {
  std::string err;
  std::string dir = RegimeDir(dir_ + "/state", &err);
  ASSERT_FALSE(dir.empty()) << err;
  std::string key = RegimeKey("run", "127.0.0.1:5");
  ASSERT_TRUE(WriteRegimeRecord(RegimeRecordPath(dir, key), Round(2, {{"n", "127.0.0.1", 7}}), &err))
      << err;
  ASSERT_TRUE(WriteRegimeRecord(dir + "/" + key + ".1", Round(5, {{"m", "127.0.0.1", 8}}), &err));
  ASSERT_TRUE(WriteRegimeRecord(dir + "/" + RegimeKey("other", "x") + ".1",
                                Round(9, {{"o", "127.0.0.1", 9}}), &err));
  std::optional<RoundInfo> latest = LatestRegime(ReadRegimeRecords(dir, key));
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->round, 5u);  // another agent's record of the same run counts; other runs do not
  EXPECT_EQ(ReadRegimeRecords(dir, RegimeKey("none", "y")).size(), 0u);
}

TEST_F(RegimeFilesTest, ADirectoryOthersMayWriteIsRefused) {
  std::string dir = dir_ + "/open";
  ASSERT_EQ(mkdir(dir.c_str(), 0777), 0);
  ASSERT_EQ(chmod(dir.c_str(), 0777), 0);
  std::string err;
  EXPECT_EQ(RegimeDir(dir, &err), "");
  EXPECT_NE(err.find(dir), std::string::npos) << err;
  std::string link = dir_ + "/link";
  ASSERT_EQ(symlink(dir_.c_str(), link.c_str()), 0);
  EXPECT_EQ(RegimeDir(link, &err), "");  // a symbolic link is not followed
}

TEST(RegimeLivenessTest, AListeningSuccessorKeepsTheRegimeAliveARefusedOneDoesNot) {
  SocketAddress addr;
  std::string err;
  ASSERT_TRUE(ResolveNumericAddress("127.0.0.1", 0, &addr, &err)) << err;
  int bind_errno = 0;
  UniqueFd listener = ListenOn(addr, &bind_errno, &err);
  ASSERT_TRUE(listener) << err;
  int live = LocalPort(listener.get());
  int dead = 0;
  {
    UniqueFd gone = ListenOn(addr, &bind_errno, &err);
    ASSERT_TRUE(gone) << err;
    dead = LocalPort(gone.get());
  }  // closed: connections to it are refused
  using std::chrono::milliseconds;
  EXPECT_TRUE(AnySuccessorListening(Round(1, {{"a", "127.0.0.1", dead}, {"b", "127.0.0.1", live}}),
                                    milliseconds(5000)));
  EXPECT_FALSE(AnySuccessorListening(Round(1, {{"a", "127.0.0.1", dead}}), milliseconds(5000)));
  EXPECT_FALSE(AnySuccessorListening(Round(1, {{"a", "127.0.0.1", 0}}), milliseconds(5000)));
}

}  // namespace
}  // namespace elastic
