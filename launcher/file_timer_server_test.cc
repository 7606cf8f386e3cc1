#include "launcher/file_timer_server.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fmt/format.h>
#include <fstream>

namespace elastic {
namespace {

class FileTimerServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/elastic-timer-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    path_ = dir_ + "/watchdog";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<FileTimerServer> Make() {
    auto s = std::make_unique<FileTimerServer>(
        loop_, path_, [this](const ExpiredTimer& e) { expired_.push_back(e); }, 4,
        [this] { return now_; });
    std::string err;
    EXPECT_TRUE(s->Start(&err)) << err;
    return s;
  }
  // What FileTimerClient does: a non-blocking open for writing, one write, close.
  void ClientWrite(const std::string& text) {
    int fd = open(path_.c_str(), O_WRONLY | O_NONBLOCK);
    ASSERT_GE(fd, 0) << "a client's non-blocking open must find a reader";
    ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    close(fd);
  }

  EventLoop loop_;
  std::string dir_, path_;
  double now_ = 1000;
  std::vector<ExpiredTimer> expired_;
};

TEST_F(FileTimerServerTest, MakesAPrivateFifoReplacingAFileAndRemovesIt) {
  { std::ofstream(path_) << "stale"; }
  {
    auto s = Make();
    struct stat st {};
    ASSERT_EQ(stat(path_.c_str(), &st), 0);
    EXPECT_TRUE(S_ISFIFO(st.st_mode));
    EXPECT_EQ(st.st_mode & 0777, 0600u);
  }
  EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_F(FileTimerServerTest, ClientRequestsSetAndReleaseTimers) {
  auto s = Make();
  ClientWrite(R"({"version": 1, "pid": 11, "scope_id": "a", "expiration_time": 1005, "signal": 9})" "\n");
  loop_.RunOnce(Millis(0));
  EXPECT_EQ(s->timers(), 1u);
  ClientWrite(R"({"version": 1, "pid": 11, "scope_id": "a", "expiration_time": -1, "signal": 0})" "\n");
  loop_.RunOnce(Millis(0));
  EXPECT_EQ(s->timers(), 0u);
  EXPECT_TRUE(expired_.empty());
}

TEST_F(FileTimerServerTest, ExpiredTimerIsReportedOnceFromTheLoop) {
  auto s = Make();
  // Already past on the (fake) wall clock: the loop timer is due at once.
  ClientWrite(R"({"version": 1, "pid": 12, "scope_id": "train.py#3", "expiration_time": 999, "signal": 9})" "\n");
  loop_.RunOnce(Millis(0));  // reads the request
  loop_.RunOnce(Millis(0));  // the timer
  ASSERT_EQ(expired_.size(), 1u);
  EXPECT_EQ(expired_[0].pid, 12);
  EXPECT_EQ(expired_[0].scope_id, "train.py#3");
  EXPECT_EQ(expired_[0].signal, 9);
  EXPECT_EQ(s->timers(), 0u);
  loop_.RunOnce(Millis(0));
  EXPECT_EQ(expired_.size(), 1u);
}

TEST_F(FileTimerServerTest, SplitLinesBadLinesAndOverlongLines) {
  auto s = Make();
  s->Feed(R"({"pid": 1, "scope_id": "a", "expira)");
  EXPECT_EQ(s->timers(), 0u);
  s->Feed(R"(tion_time": 2000, "signal": 9})" "\ngarbage\n");
  EXPECT_EQ(s->timers(), 1u);
  // An over-long line is dropped up to its newline; the next line counts.
  s->Feed(std::string(kMaxFileTimerRequest + 10, 'x'));
  s->Feed(std::string(100, 'y') + "\n" + R"({"pid": 2, "scope_id": "b", "expiration_time": 2000, "signal": 9})" "\n");
  EXPECT_EQ(s->timers(), 2u);
}

TEST_F(FileTimerServerTest, TimersAreBounded) {
  auto s = Make();  // at most 4
  for (int pid = 1; pid <= 10; ++pid) {
    s->Feed(fmt::format(R"({{"pid": {}, "scope_id": "a", "expiration_time": 2000, "signal": 9}})" "\n", pid));
  }
  EXPECT_EQ(s->timers(), 4u);
  s->Clear();
  EXPECT_EQ(s->timers(), 0u);
}

TEST_F(FileTimerServerTest, FutureTimerWaitsForItsTime) {
  auto s = Make();
  s->Feed(R"({"pid": 5, "scope_id": "a", "expiration_time": 1000.05, "signal": 9})" "\n");
  now_ = 1000.0;
  loop_.RunOnce(Millis(0));
  EXPECT_TRUE(expired_.empty());
  now_ = 1000.1;  // the loop timer (50 ms, real) fires; the fake wall clock says it is due
  for (int i = 0; i < 100 && expired_.empty(); ++i) loop_.RunOnce(Millis(1000));
  ASSERT_EQ(expired_.size(), 1u);
  EXPECT_EQ(expired_[0].pid, 5);
}

}  // namespace
}  // namespace elastic
