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

// Issue 19 item 11: the line when a worker failed and the node joins the next round
// says a restart only while one is left (it used to say "restarting the workers after
// rank 0 failed" with none left, right before the job failed).
TEST(FailureReportTest, RejoinLineSaysRestartOnlyWhileOneIsLeft) {
  struct Row {
    int rank, used, max;
    const char* flag;
    const char* line;
  } rows[] = {
      {0, 0, 0, "--max-restarts", "rank 0 failed and no restart is left (--max-restarts=0, 0 used): the job ends"},
      {0, 0, 1, "--max-restarts", "restarting the workers after rank 0 failed (restart 1 of 1, --max-restarts)"},
      {3, 1, 1, "--max-restarts", "rank 3 failed and no restart is left (--max-restarts=1, 1 used): the job ends"},
      {5, 2, 3, "--elastic-max-restarts",
       "restarting the workers after rank 5 failed (restart 3 of 3, --elastic-max-restarts)"},
      {5, 3, 3, "--elastic-max-restarts",
       "rank 5 failed and no restart is left (--elastic-max-restarts=3, 3 used): the job ends"},
      // A count carried past the budget (a failover's): still the end.
      {1, 4, 3, "--max-restarts", "rank 1 failed and no restart is left (--max-restarts=3, 4 used): the job ends"},
  };
  for (const Row& r : rows) {
    WorkerFailure f;
    f.global_rank = r.rank;
    f.exit_code = 1;
    EXPECT_EQ(FormatRejoinLine(f, r.used, r.max, r.flag), r.line) << r.used << " of " << r.max;
  }
}

TEST(FailureReportTest, LostHostWithNoRestartLeftNamesTheHost) {
  WorkerFailure f;
  f.host = "n0";
  f.host_lost = true;
  f.message = "lost the rendezvous host n0:29500: connection closed by peer";
  std::string s = FormatFailureSummary(f, 0, 0, EndReason::kHostLost, "--max-restarts");
  EXPECT_TRUE(s.starts_with("job failed: the rendezvous host n0 was lost and no restart was left: a "
                            "lost node counts against --max-restarts, which is 0\n"))
      << s;
  for (const char* bad : {"rank -1", "exit code 0", "1970"}) {
    EXPECT_EQ(s.find(bad), std::string::npos) << bad << "\n" << s;
  }
}

// Rank `global_rank` (local rank `local_rank`) on n1 exited with `exit_code`.
WorkerFailure RankFailure(int global_rank, int local_rank, int exit_code) {
  WorkerFailure f;
  f.host = "n1";
  f.global_rank = global_rank, f.local_rank = local_rank, f.exit_code = exit_code;
  return f;
}

TEST(FailureReportTest, WorkerFailureOfALaterAttemptSaysItIsTheLastAttempts) {
  WorkerFailure f = RankFailure(1, 1, 1);
  std::string s = FormatFailureSummary(f, 2, 2, EndReason::kWorkerFailed, "--elastic-max-restarts");
  EXPECT_NE(s.find("attempt:       the last one (restart 2)"), std::string::npos) << s;
  EXPECT_NE(s.find("restarts used: 2 of 2 (--elastic-max-restarts)"), std::string::npos) << s;
  EXPECT_EQ(s.find("1970"), std::string::npos) << s;  // no time told
}

// A failure after a node finished ends the job with restarts left: the summary says why
// none was tried, not only "restarts used: 0 of 2"; the rendezvous's words (the message
// when the worker wrote no error file) name the node.
TEST(FailureReportTest, NoRestartWithRestartsLeftSaysWhy) {
  WorkerFailure f = RankFailure(1, 0, 3);
  f.message = "worker 1 (local rank 0) on n1 failed after node n0 had finished (its workers all "
              "exited 0); a restart would need its workers again";
  std::string s = FormatFailureSummary(f, 0, 2);
  EXPECT_NE(s.find("  restarts used: 0 of 2 (--max-restarts)\n  no restart:    a node had finished (its "
                   "workers all exited 0): a restart would need its workers again\n  message:       "
                   "worker 1 (local rank 0) on n1 failed after node n0 had finished"), std::string::npos) << s;
  // Restarts used up: the count says it all.
  EXPECT_EQ(FormatFailureSummary(f, 2, 2).find("no restart:"), std::string::npos);
  // Other ends with restarts left say why in their own words (crash loop, no progress).
  EXPECT_EQ(FormatFailureSummary(f, 0, 2, EndReason::kCrashLoop).find("no restart:"), std::string::npos);
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
