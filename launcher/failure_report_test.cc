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

TEST(FailureReportTest, ExitCodeAndHintWithoutErrorFile) {
  WorkerFailure f;
  f.exit_code = 3;
  std::string s = FormatFailureSummary(f, 0, 0);
  EXPECT_NE(s.find("exit code 3"), std::string::npos);
  EXPECT_NE(s.find("@record"), std::string::npos) << s;
}

}  // namespace
}  // namespace elastic
