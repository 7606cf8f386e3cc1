#include "launcher/comment_updater.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <vector>

#include "common/log.h"

namespace elastic {
namespace {

// Real processes: a fake scontrol that fails as the controller does once the job has
// ended ("Job has already finished for job 53", exit 1), on the real event loop.
class CommentUpdaterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/comment_updater_test.XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    SetLogSink([this](const std::string& line) { lines_.push_back(line); });
  }
  void TearDown() override {
    SetLogSink({});
    ASSERT_EQ(system(("rm -rf " + dir_).c_str()), 0);
  }

  // The job starts (the first update is sent at once); returns what was logged once
  // that update's scontrol ended.
  std::vector<std::string> FirstUpdate(std::function<bool()> job_ended) {
    std::string path = dir_ + "/scontrol";
    std::ofstream(path) << "#!/bin/sh\necho 'Job has already finished for job 53' >&2\nexit 1\n";
    chmod(path.c_str(), 0755);
    ScontrolSpec spec;
    spec.scontrol = path;
    spec.timeout = std::chrono::milliseconds(10000);
    spec.log_path = dir_ + "/slurm_comment.log";
    spec.env = {"PATH=/usr/bin:/bin"};
    sigemptyset(&spec.child_mask);
    CommentUpdater updater(loop_, "53", Millis(0), spec, std::move(job_ended));
    JobEvent start;
    start.kind = JobEventKind::kJobStart;
    updater.OnEvent(start);
    EXPECT_GT(updater.pid(), 0);
    // Its end is a loop event; then one more turn for the answer's callback.
    Timer check;
    std::function<void()> poll = [&] {
      if (updater.pid() > 0) {
        check = loop_.After(Millis(20), poll);
        return;
      }
      check = loop_.After(Millis(20), [this] { loop_.Stop(); });
    };
    check = loop_.After(Millis(20), poll);
    loop_.Run();
    return lines_;
  }

  EventLoop loop_;
  std::string dir_;
  std::vector<std::string> lines_;
};

TEST_F(CommentUpdaterTest, AFailedUpdateIsWarnedOnceWhileTheJobRuns) {
  std::vector<std::string> lines = FirstUpdate([] { return false; });
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("cannot write the job's live status to Slurm's Comment (scontrol update JobId=53): "
                          "exit code 1"),
            std::string::npos)
      << lines[0];
}

// The time limit passed: the controller refuses the update before this node's SIGTERM
// came (the time-limit scenario, 2026-12-07). Not news: nothing is logged.
TEST_F(CommentUpdaterTest, AFailedUpdatePastTheJobsEndIsNotWarned) {
  EXPECT_EQ(FirstUpdate([] { return true; }), std::vector<std::string>{});
}

TEST_F(CommentUpdaterTest, WithoutAnEndTimeAFailedUpdateIsWarned) {
  EXPECT_EQ(FirstUpdate({}).size(), 1u);
}

}  // namespace
}  // namespace elastic
