// Regime records (regime_record.h): the record's format as a table, the latest
// regime, the directory's safety checks, and the liveness check on real sockets.
#include "rendezvous/regime_record.h"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <thread>


#include <gtest/gtest.h>

#include "common/net.h"
#include "rendezvous/failover_rules.h"
#include "rendezvous/frame.h"
#include "rendezvous/messages.h"

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

// Issue 19: run ids repeat. A record of an earlier run with the same id named
// successors where the new run's agents listened; the new agent walked them and
// waited for a host that had completed the old round. A successor counts as the
// record's regime only when its challenge names the same regime.
TEST(RegimeRecordTest, ASuccessorIsTheRecordedRegimesOnlyWhenItNamesTheSameRegime) {
  const std::string a(64, 'a'), b(64, 'b');
  auto challenge = [](const std::string& run_id, const std::string& regime) {
    nlohmann::json j = {{"version", kRendezvousProtocolVersion}, {"run_id", run_id},
                        {"nonce", std::string(64, 'c')}, {"auth", "none"}, {"round", 0},
                        {"last_completed", -1}};
    if (!regime.empty()) j["regime"] = regime;
    return EncodeMessage("challenge", j).substr(4);  // the payload, without the frame header
  };
  struct Row {
    const char* name;
    std::string record_regime;
    std::string payload;
    SuccessorAnswer want;
  };
  const Row rows[] = {
      {"the same regime", a, challenge("run", a), SuccessorAnswer::kOurs},
      {"a later run with the same id", a, challenge("run", b), SuccessorAnswer::kOther},
      {"another run id", a, challenge("other", a), SuccessorAnswer::kOther},
      {"an old record without a regime: cannot tell", "", challenge("run", b), SuccessorAnswer::kOurs},
      {"an old host without a regime: cannot tell", a, challenge("run", ""), SuccessorAnswer::kOurs},
      {"not our protocol", a, "GET / HTTP/1.0", SuccessorAnswer::kOther},
      {"another message", a, EncodeMessage("heartbeat").substr(4), SuccessorAnswer::kOther},
  };
  for (const Row& r : rows) {
    RoundInfo record = Round(3, {{"n0", "127.0.0.1", 1}});
    record.regime = r.record_regime;
    EXPECT_EQ(ClassifyChallenge(r.payload, record, "run"), r.want) << r.name;
  }
  using A = SuccessorAnswer;
  EXPECT_TRUE(RegimeMayRun({A::kRefused, A::kOurs}));
  EXPECT_TRUE(RegimeMayRun({A::kOther, A::kSilent}));  // maybe behind a partition
  EXPECT_FALSE(RegimeMayRun({A::kOther, A::kRefused}));
  EXPECT_FALSE(RegimeMayRun({}));
}

TEST(RegimeRecordTest, TheRegimeIdRoundTripsThroughTheRecord) {
  RoundInfo in = Round(4, {{"n0", "10.0.0.1", 29400}});
  in.regime = std::string(64, 'e');
  RoundInfo out;
  std::string err;
  ASSERT_TRUE(DecodeRegimeRecord(EncodeRegimeRecord(in), &out, &err)) << err;
  EXPECT_EQ(out.regime, in.regime);
  EXPECT_FALSE(DecodeRegimeRecord(
      R"({"type": "waiting", "standby": {"round": 1, "regime": "x\n", "successors": []}})", &out,
      &err));
  EXPECT_NE(err.find("regime"), std::string::npos) << err;
}

TEST_F(RegimeFilesTest, ExpiringARegimeDeletesItsRecordsOnly) {
  std::string err;
  std::string key = RegimeKey("run", "127.0.0.1:5");
  RoundInfo old_run = Round(7, {{"n", "127.0.0.1", 7}});
  old_run.regime = std::string(64, 'a');
  RoundInfo new_run = Round(1, {{"m", "127.0.0.1", 8}});
  new_run.regime = std::string(64, 'b');
  ASSERT_TRUE(WriteRegimeRecord(dir_ + "/" + key + ".1", old_run, &err)) << err;
  ASSERT_TRUE(WriteRegimeRecord(dir_ + "/" + key + ".2", new_run, &err)) << err;
  ExpireRegimeRecords(dir_, key, old_run);
  std::optional<RoundInfo> latest = LatestRegime(ReadRegimeRecords(dir_, key));
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->regime, new_run.regime);
  EXPECT_EQ(ReadRegimeRecords(dir_, key).size(), 1u);
}

TEST(RegimeLivenessTest, SuccessorsAreAskedWhoseRegimeTheyRun) {
  SocketAddress addr;
  std::string err;
  ASSERT_TRUE(ResolveNumericAddress("127.0.0.1", 0, &addr, &err)) << err;
  int bind_errno = 0;
  UniqueFd silent = ListenOn(addr, &bind_errno, &err);  // an agent's takeover listener
  ASSERT_TRUE(silent) << err;
  UniqueFd host = ListenOn(addr, &bind_errno, &err);  // a host: answers with its challenge
  ASSERT_TRUE(host) << err;
  int dead = 0;
  {
    UniqueFd gone = ListenOn(addr, &bind_errno, &err);
    ASSERT_TRUE(gone) << err;
    dead = LocalPort(gone.get());
  }  // closed: connections to it are refused
  RoundInfo record = Round(1, {{"a", "127.0.0.1", dead}, {"b", "127.0.0.1", LocalPort(silent.get())},
                               {"c", "127.0.0.1", LocalPort(host.get())}, {"d", "127.0.0.1", 0}});
  record.regime = std::string(64, 'a');
  // The "host" answers once its connection is in the backlog: a thread plays it.
  std::string regime_b(64, 'b');
  std::thread answer([&] {
    // The listener is non-blocking: wait (bounded) for the connection first, or
    // accept may run before AskSuccessors connects and the "host" never answers.
    pollfd p{host.get(), POLLIN, 0};
    (void)poll(&p, 1, 5000);
    UniqueFd c(accept(host.get(), nullptr, nullptr));
    nlohmann::json j = {{"version", kRendezvousProtocolVersion}, {"run_id", "run"},
                        {"nonce", std::string(64, 'c')}, {"auth", "none"}, {"regime", regime_b}};
    std::string frame = EncodeMessage("challenge", j);  // framed
    if (c) (void)!write(c.get(), frame.data(), frame.size());
  });
  using std::chrono::milliseconds;
  std::vector<SuccessorAnswer> answers = AskSuccessors(record, "run", milliseconds(1000));
  answer.join();
  using A = SuccessorAnswer;
  EXPECT_EQ(answers, (std::vector<A>{A::kRefused, A::kSilent, A::kOther, A::kRefused}));
}

}  // namespace
}  // namespace elastic
