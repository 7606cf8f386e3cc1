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

// Worker and network text in the summary, as a table: what each field holds and
// what must appear instead. Before the fix a newline in error.json or in a host's
// job_failed forged an "elasticrun:" line and ESC c cleared the terminal.
TEST(FailureReportTest, ForeignTextIsEscaped) {
  struct Row {
    const char* what;
    std::string host, message, traceback;
    const char* expected;
  };
  const Row rows[] = {
      {"newline in the message", "n1", "boom\nelasticrun: job succeeded", "",
       "  message:       boom\\x0aelasticrun: job succeeded\n"},
      {"terminal reset in the message", "n1", "\x1b" "c\x1b[2J", "", "  message:       \\x1bc\\x1b[2J\n"},
      {"carriage return in the message", "n1", "ok\rFAKE", "", "  message:       ok\\x0dFAKE\n"},
      {"newline in the host", "n1\nelasticrun: forged", "m", "",
       "on n1\\x0aelasticrun: forged: exit code 1\n"},
      {"escape in a traceback line", "n1", "", "Traceback\n  \x1b]0;title\x07\n",
       "    \\x1b]0;title\\x07\n"},
      {"carriage return in a traceback line", "n1", "", "line\r\n", "    line\\x0d\n"},
      {"backslash stays readable", "n1", "C:\\dir", "", "  message:       C:\\\\dir\n"},
  };
  for (const Row& row : rows) {
    WorkerFailure f;
    f.exit_code = 1;
    f.host = row.host;
    f.message = row.message;
    f.traceback = row.traceback;
    std::string s = FormatFailureSummary(f, 0, 0);
    EXPECT_NE(s.find(row.expected), std::string::npos) << row.what << "\n" << s;
    for (char c : s) {
      unsigned char u = static_cast<unsigned char>(c);
      EXPECT_TRUE(u == '\n' || (u >= 0x20 && u < 0x7f)) << row.what << ": byte " << int(u) << "\n" << s;
    }
    // Every line of the summary is the summary's own: none starts like a log line.
    for (size_t at = s.find('\n'); at != std::string::npos && at + 1 < s.size(); at = s.find('\n', at + 1))
      EXPECT_EQ(s[at + 1], ' ') << row.what << "\n" << s;
  }
}

TEST(FailureReportTest, LongMessageIsBounded) {
  WorkerFailure f;
  f.message = std::string(100000, 'x');
  std::string s = FormatFailureSummary(f, 0, 0);
  EXPECT_LT(s.size(), kSummaryMessageBytes + 1000);
  EXPECT_NE(s.find("...(100000 bytes)"), std::string::npos);
}

}  // namespace
}  // namespace elastic
