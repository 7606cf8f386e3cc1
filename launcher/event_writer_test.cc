#include "launcher/event_writer.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "testing/fake_clock.h"

namespace elastic {
namespace {

class EventWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/event_writer_test_XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    dir = templ;
    path = dir + "/events.jsonl";
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::unique_ptr<EventWriter> Make(uint64_t max_bytes = EventWriter::kDefaultMaxFileBytes) {
    EventWriter::File f;
    std::string err;
    EXPECT_TRUE(EventWriter::OpenFile(path, "--events", &f, &err)) << err;
    std::vector<EventWriter::File> files;
    files.push_back(std::move(f));
    return std::make_unique<EventWriter>(loop, std::move(files), false, [this] { return ++wall; }, max_bytes);
  }
  std::vector<std::string> Lines() const {
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
  void Start(EventWriter& w) { w.OnHostStart(settings, "7.0", "n1:1", nullptr, clock.Now()); }

  FakeClock clock;
  EventLoop loop{clock};
  RendezvousSettings settings;
  std::string dir, path;
  int64_t wall = 1'700'000'000'000;
};

// Lines are written from the loop (the observer call itself writes nothing),
// appended to what the file held, and each reads back.
TEST_F(EventWriterTest, WritesFromTheLoopAndAppends) {
  { std::ofstream(path) << "{\"earlier\":1}\n"; }
  auto w = Make();
  Start(*w);
  EXPECT_EQ(Lines().size(), 1u);  // not yet: the loop writes it
  loop.RunOnce(Millis(0));
  std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "{\"earlier\":1}");
  JobEvent e;
  std::string err;
  ASSERT_TRUE(DecodeJobEvent(lines[1], &e, &err)) << err;
  EXPECT_EQ(e.kind, JobEventKind::kJobStart);
  EXPECT_EQ(e.host, "n1:1");
}

// An agent's own verdict goes into the same file the same way (from the loop) and
// reads back; the listener (the host's Comment) hears only the host's events.
TEST_F(EventWriterTest, AnAgentsVerdictIsWrittenNotTold) {
  auto w = Make();
  std::vector<JobEventKind> told;
  w->SetListener([&](const JobEvent& e) { told.push_back(e.kind); });
  AgentEventContext ctx{"7.0", "n2", 3, 1, 2};
  w->Record(MakeHealthCheckEvent(ctx, "kept_out", "exit code 1", w->NowUnixMillis()));
  EXPECT_TRUE(told.empty());
  EXPECT_TRUE(Lines().empty());  // not yet: the loop writes it
  loop.RunOnce(Millis(0));
  std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 1u);
  JobEvent e;
  std::string err;
  ASSERT_TRUE(DecodeJobEvent(lines[0], &e, &err)) << err;
  EXPECT_EQ(e.kind, JobEventKind::kHealthCheck);
  EXPECT_EQ(e.node, "n2");
  EXPECT_EQ(e.host, "n2");
  EXPECT_EQ(e.round, 3u);
  EXPECT_EQ(e.restarts_left, 1);
  EXPECT_EQ(e.reason, "kept_out");
  EXPECT_EQ(e.message, "exit code 1");
  EXPECT_EQ(e.time_unix_ms, 1'700'000'000'001);
}

TEST_F(EventWriterTest, EachFileIsBounded) {
  auto w = Make(/*max_bytes=*/600);
  for (int i = 0; i < 10; ++i) Start(*w);
  loop.RunOnce(Millis(0));
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_LE(st.st_size, 600);
  EXPECT_GE(Lines().size(), 1u);
  for (const std::string& line : Lines()) {
    JobEvent e;
    std::string err;
    EXPECT_TRUE(DecodeJobEvent(line, &e, &err)) << err;  // whole lines only
  }
}

// A loop that never turns (or a file that never takes the lines) holds at most
// kMaxQueuedLines; the rest is counted, not kept.
TEST_F(EventWriterTest, TheQueueIsBounded) {
  auto w = Make();
  for (size_t i = 0; i < EventWriter::kMaxQueuedLines + 5; ++i) Start(*w);
  EXPECT_EQ(w->dropped(), 5u);
  w->Flush();
  EXPECT_EQ(Lines().size(), EventWriter::kMaxQueuedLines);
}

TEST_F(EventWriterTest, AnUnwritablePathIsAnErrorNamingIt) {
  EventWriter::File f;
  std::string err;
  EXPECT_FALSE(EventWriter::OpenFile(dir + "/no/such/dir/e.jsonl", "--events", &f, &err));
  EXPECT_NE(err.find("--events: cannot open '" + dir + "/no/such/dir/e.jsonl'"), std::string::npos) << err;
  EXPECT_NE(err.find("No such file"), std::string::npos) << err;
}

}  // namespace
}  // namespace elastic
