#include "launcher/file_timer_request.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

struct ParseCase {
  const char* line;
  bool ok;
  pid_t pid;
  const char* scope;
  double expiration;
  int signal;
  const char* error;  // part of the message when !ok
};

TEST(FileTimerRequestTest, ParsesWhatFileTimerClientWrites) {
  const ParseCase cases[] = {
      // FileTimerRequest.to_json() of 1.13 and 2.x, acquire and release.
      {R"({"version": 1, "pid": 4242, "scope_id": "train.py#17", "expiration_time": 1764590000.5, "signal": 9})",
       true, 4242, "train.py#17", 1764590000.5, 9, ""},
      {R"({"version": 1, "pid": 4242, "scope_id": "train.py#17", "expiration_time": -1, "signal": 0})", true,
       4242, "train.py#17", -1, 0, ""},
      {R"({"pid": 7, "scope_id": "", "expiration_time": 12, "signal": -1})", true, 7, "", 12, -1, ""},
      {R"({"pid": 7, "scope_id": "s", "expiration_time": 1e3, "signal": 6, "extra": [1]})", true, 7, "s",
       1000, 6, ""},
      {"not json", false, 0, "", 0, 0, "not a JSON object"},
      {"[1, 2]", false, 0, "", 0, 0, "not a JSON object"},
      {R"({"scope_id": "s", "expiration_time": 1, "signal": 9})", false, 0, "", 0, 0, "without \"pid\""},
      {R"({"pid": 0, "scope_id": "s", "expiration_time": 1, "signal": 9})", false, 0, "", 0, 0,
       "\"pid\" is 0"},
      {R"({"pid": -5, "scope_id": "s", "expiration_time": 1, "signal": 9})", false, 0, "", 0, 0,
       "\"pid\" is -5"},
      {R"({"pid": 99999999999, "scope_id": "s", "expiration_time": 1, "signal": 9})", false, 0, "", 0, 0,
       "\"pid\" is 99999999999"},
      {R"({"pid": 18446744073709551615, "scope_id": "s", "expiration_time": 1, "signal": 9})", false, 0, "",
       0, 0, "not in [1,"},
      {R"({"pid": 1.5, "scope_id": "s", "expiration_time": 1, "signal": 9})", false, 0, "", 0, 0,
       "not an integer"},
      {R"({"pid": "12", "scope_id": "s", "expiration_time": 1, "signal": 9})", false, 0, "", 0, 0,
       "not an integer"},
      {R"({"pid": 12, "scope_id": 3, "expiration_time": 1, "signal": 9})", false, 0, "", 0, 0,
       "\"scope_id\" is 3, not a string"},
      {R"({"pid": 12, "scope_id": "s", "signal": 9})", false, 0, "", 0, 0, "without \"expiration_time\""},
      {R"({"pid": 12, "scope_id": "s", "expiration_time": "soon", "signal": 9})", false, 0, "", 0, 0,
       "\"expiration_time\" is \"soon\""},
      {R"({"pid": 12, "scope_id": "s", "expiration_time": 1e400, "signal": 9})", false, 0, "", 0, 0,
       "expiration_time"},
      {R"({"pid": 12, "scope_id": "s", "expiration_time": 1})", false, 0, "", 0, 0, "without \"signal\""},
      {R"({"pid": 12, "scope_id": "s", "expiration_time": 1, "signal": 65})", false, 0, "", 0, 0,
       "\"signal\" is 65, not in [-64, 64]"},
      {R"({"version": 2, "pid": 12, "scope_id": "s", "expiration_time": 1, "signal": 9})", false, 0, "", 0, 0,
       "\"version\" is 2"},
  };
  for (const ParseCase& c : cases) {
    SCOPED_TRACE(c.line);
    FileTimerRequest r;
    std::string err;
    ASSERT_EQ(ParseFileTimerRequest(c.line, &r, &err), c.ok) << err;
    if (c.ok) {
      EXPECT_EQ(r.pid, c.pid);
      EXPECT_EQ(r.scope_id, c.scope);
      EXPECT_DOUBLE_EQ(r.expiration_time, c.expiration);
      EXPECT_EQ(r.signal, c.signal);
      EXPECT_EQ(r.release(), c.expiration < 0);
    } else {
      EXPECT_NE(err.find(c.error), std::string::npos) << err;
    }
  }
}

TEST(FileTimerRequestTest, RefusesLinesOverPipeBuf) {
  std::string line = R"({"pid": 1, "scope_id": ")" + std::string(kMaxFileTimerRequest, 'x') +
                     R"(", "expiration_time": 1, "signal": 9})";
  FileTimerRequest r;
  std::string err;
  EXPECT_FALSE(ParseFileTimerRequest(line, &r, &err));
  EXPECT_NE(err.find("over the limit of 4096"), std::string::npos) << err;
}

FileTimerRequest Req(pid_t pid, const char* scope, double expiration, int signal = 9) {
  FileTimerRequest r;
  r.pid = pid;
  r.scope_id = scope;
  r.expiration_time = expiration;
  r.signal = signal;
  return r;
}

TEST(TimerTableTest, SetReleaseAndLimit) {
  TimerTable t(2);
  using A = TimerTable::Applied;
  EXPECT_EQ(t.Apply(Req(1, "a", 10)), A::kSet);
  EXPECT_EQ(t.Apply(Req(1, "b", 5)), A::kSet);
  EXPECT_EQ(t.Apply(Req(2, "a", 1)), A::kFull);       // a third timer
  EXPECT_EQ(t.Apply(Req(1, "a", 20)), A::kSet);       // replacing is fine when full
  EXPECT_EQ(t.Earliest(), 5.0);
  EXPECT_EQ(t.Apply(Req(1, "b", -1, 0)), A::kReleased);
  EXPECT_EQ(t.Apply(Req(1, "b", -1, 0)), A::kNotHeld);
  EXPECT_EQ(t.Earliest(), 20.0);
  EXPECT_EQ(t.size(), 1u);
}

TEST(TimerTableTest, ExpiredOnePerPidEarliestWithSignal) {
  struct Case {
    const char* name;
    std::vector<FileTimerRequest> set;
    double now;
    std::vector<ExpiredTimer> want;
    size_t left;
  };
  const Case cases[] = {
      {"nothing due", {Req(1, "a", 10)}, 9.9, {}, 1},
      {"due at exactly now", {Req(1, "a", 10)}, 10, {{1, "a", 10, 9}}, 0},
      {"earliest of a pid, all its timers go, others stay",
       {Req(1, "late", 8), Req(1, "early", 3), Req(1, "future", 50), Req(2, "x", 40)},
       10,
       {{1, "early", 3, 9}},
       1},
      {"the earliest asking for a signal wins",
       {Req(1, "nosig", 1, 0), Req(1, "sig", 2, 15)},
       10,
       {{1, "sig", 2, 15}},
       0},
      {"no signal asked: reported with signal 0",
       {Req(1, "a", 2, 0), Req(1, "b", 1, -1)},
       10,
       {{1, "b", 1, 0}},
       0},
      {"two pids", {Req(3, "a", 1), Req(4, "b", 2, 6)}, 10, {{3, "a", 1, 9}, {4, "b", 2, 6}}, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TimerTable t(100);
    for (const auto& r : c.set) t.Apply(r);
    std::vector<ExpiredTimer> got = t.TakeExpired(c.now);
    ASSERT_EQ(got.size(), c.want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].pid, c.want[i].pid);
      EXPECT_EQ(got[i].scope_id, c.want[i].scope_id);
      EXPECT_DOUBLE_EQ(got[i].expiration_time, c.want[i].expiration_time);
      EXPECT_EQ(got[i].signal, c.want[i].signal);
    }
    EXPECT_EQ(t.size(), c.left);
  }
}

}  // namespace
}  // namespace elastic
