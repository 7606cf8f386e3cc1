#include "launcher/failure_report.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>

namespace elastic {
namespace {

std::string WriteTemp(const std::string& text) {
  char path[] = "/tmp/elastic-errfile-XXXXXX";
  int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << text;
  return path;
}

TEST(FailureReportTest, ReadsTorchRecordFile) {
  std::string path = WriteTemp(
      R"({"message": {"message": "RuntimeError: boom", "extraInfo": {"py_callstack": "Traceback (most recent call last):\n  File \"t.py\"\nRuntimeError: boom\n", "timestamp": "1"}}})");
  std::string message, traceback;
  ASSERT_TRUE(ReadErrorFile(path, &message, &traceback));
  EXPECT_EQ(message, "RuntimeError: boom");
  EXPECT_NE(traceback.find("Traceback (most recent call last)"), std::string::npos);
  unlink(path.c_str());
}

TEST(FailureReportTest, PlainStringMessage) {
  std::string path = WriteTemp(R"({"message": "worker said no"})");
  std::string message, traceback;
  ASSERT_TRUE(ReadErrorFile(path, &message, &traceback));
  EXPECT_EQ(message, "worker said no");
  unlink(path.c_str());
}

TEST(FailureReportTest, MissingOrGarbageFile) {
  std::string message, traceback;
  EXPECT_FALSE(ReadErrorFile("/nonexistent/error.json", &message, &traceback));
  std::string path = WriteTemp("not json {");
  EXPECT_FALSE(ReadErrorFile(path, &message, &traceback));
  unlink(path.c_str());
}

TEST(FailureReportTest, SummaryNamesEverything) {
  WorkerFailure f;
  f.global_rank = 5;
  f.local_rank = 1;
  f.host = "node7";
  f.signal = SIGKILL;
  f.time_unix_ms = 1700000000123;
  f.message = "RuntimeError: boom";
  f.traceback = "Traceback (most recent call last):\nRuntimeError: boom\n";
  std::string s = FormatFailureSummary(f, 2, 2);
  for (const char* text : {"rank 5 (local rank 1) on node7", "signal SIGKILL (9)", "2023-11-14T22:13:20.123Z",
                           "restarts used: 2 of 2", "RuntimeError: boom", "    Traceback (most recent"}) {
    EXPECT_NE(s.find(text), std::string::npos) << text << "\n" << s;
  }
}

// The rendezvous ends a job for a lost node with only the node's name: no
// "rank -1 ... exit code 0", no 1970 timestamp; it says what happened.
TEST(FailureReportTest, LostNodeWithNoRestartLeftSaysSo) {
  WorkerFailure f;
  f.host = "n2:4711";  // the rendezvous names the agent: host:pid
  f.message = "node n2:4711 left (connection closed)";
  std::string s = FormatFailureSummary(f, 0, 0, EndReason::kNodesLost, "--elastic-max-restarts");
  EXPECT_TRUE(s.starts_with("job failed: node n2 was lost and no restart was left: a lost node "
                            "counts against --elastic-max-restarts, which is 0\n"))
      << s;
  EXPECT_NE(s.find("what:          node n2:4711 left (connection closed)"), std::string::npos) << s;
  for (const char* bad : {"rank -1", "exit code 0", "1970"}) {
    EXPECT_EQ(s.find(bad), std::string::npos) << bad << "\n" << s;
  }
}

TEST(FailureReportTest, WorkerFailureOfALaterAttemptSaysItIsTheLastAttempts) {
  WorkerFailure f;
  f.global_rank = 1;
  f.local_rank = 1;
  f.host = "n1";
  f.exit_code = 1;
  std::string s = FormatFailureSummary(f, 2, 2, EndReason::kWorkerFailed, "--elastic-max-restarts");
  EXPECT_NE(s.find("attempt:       the last one (restart 2)"), std::string::npos) << s;
  EXPECT_NE(s.find("restarts used: 2 of 2 (--elastic-max-restarts)"), std::string::npos) << s;
  EXPECT_EQ(s.find("1970"), std::string::npos) << s;  // no time told
}

TEST(FailureReportTest, ExitCodeAndHintWithoutErrorFile) {
  WorkerFailure f;
  f.exit_code = 3;
  std::string s = FormatFailureSummary(f, 0, 0);
  EXPECT_NE(s.find("exit code 3"), std::string::npos);
  EXPECT_NE(s.find("@record"), std::string::npos) << s;
}

}  // namespace
}  // namespace elastic
