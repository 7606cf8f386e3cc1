#include "launcher/console_queue.h"

#include <errno.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace elastic {
namespace {

// A console that takes, per write call, what its script says: a number of bytes
// (capped by what is asked), or -errno.
struct FakeConsole {
  explicit FakeConsole(std::vector<long> answers) : script(std::move(answers)) {}
  std::vector<long> script;
  size_t call = 0;
  std::string taken;
  ConsoleQueue::WriteFn Fn() {
    return [this](const char* data, size_t size) -> ssize_t {
      long step = call < script.size() ? script[call] : -EAGAIN;
      ++call;
      if (step < 0) {
        errno = static_cast<int>(-step);
        return -1;
      }
      size_t n = std::min(size, static_cast<size_t>(step));
      taken.append(data, n);
      return static_cast<ssize_t>(n);
    };
  }
};

constexpr long kAll = 1 << 20;

struct Row {
  const char* name;
  std::vector<std::pair<int, std::string>> pushes;  // source, text
  std::vector<long> script;                          // the console's answers
  ConsoleQueue::Flushed result;
  std::string written;
  size_t left;               // bytes still queued
  std::vector<bool> over;    // over_limit(0), over_limit(1) after the flush
  std::vector<int> room;     // sources that fell back under the limit
};

TEST(ConsoleQueueTest, Table) {
  // limit 4 bytes per source
  const std::vector<Row> rows = {
      {"everything accepted", {{0, "a\n"}, {1, "b\n"}}, {kAll, kAll},
       ConsoleQueue::Flushed::kEmpty, "a\nb\n", 0, {false, false}, {}},
      {"EAGAIN at once keeps all, in order", {{0, "a\n"}, {1, "b\n"}}, {-EAGAIN},
       ConsoleQueue::Flushed::kBlocked, "", 4, {false, false}, {}},
      {"partial write finishes its chunk before the next source's",
       {{0, "aaa\n"}, {1, "b\n"}, {0, "c\n"}}, {2, kAll, kAll, kAll},
       ConsoleQueue::Flushed::kEmpty, "aaa\nb\nc\n", 0, {false, false}, {0}},
      {"partial then EAGAIN keeps the rest of the chunk first",
       {{0, "aaa\n"}, {1, "b\n"}}, {3, -EAGAIN},
       ConsoleQueue::Flushed::kBlocked, "aaa", 3, {false, false}, {0}},
      {"EINTR is retried", {{0, "a\n"}}, {-EINTR, kAll},
       ConsoleQueue::Flushed::kEmpty, "a\n", 0, {false, false}, {}},
      {"a source at its limit is over it", {{0, "aa\n"}, {0, "bb\n"}, {1, "c\n"}}, {-EAGAIN},
       ConsoleQueue::Flushed::kBlocked, "", 8, {true, false}, {}},
      {"room again once written below the limit", {{0, "aa\n"}, {0, "bb\n"}}, {3, -EAGAIN},
       ConsoleQueue::Flushed::kBlocked, "aa\n", 3, {false, false}, {0}},
      {"still over after a write too small", {{0, "aa\n"}, {0, "bb\n"}, {0, "dd\n"}}, {2, -EAGAIN},
       ConsoleQueue::Flushed::kBlocked, "aa", 7, {true, false}, {}},
      {"EPIPE closes and drops everything", {{0, "aa\n"}, {0, "bb\n"}}, {1, -EPIPE},
       ConsoleQueue::Flushed::kClosed, "a", 0, {false, false}, {}},
      {"a write of 0 bytes closes", {{1, "b\n"}}, {0},
       ConsoleQueue::Flushed::kClosed, "", 0, {false, false}, {}},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    ConsoleQueue q(4);
    for (const auto& [source, text] : r.pushes) q.Push(source, text);
    FakeConsole console(r.script);
    std::vector<int> room;
    EXPECT_EQ(q.Flush(console.Fn(), &room), r.result);
    EXPECT_EQ(console.taken, r.written);
    EXPECT_EQ(q.queued(), r.left);
    EXPECT_EQ(q.over_limit(0), r.over[0]);
    EXPECT_EQ(q.over_limit(1), r.over[1]);
    EXPECT_EQ(room, r.room);
  }
}

TEST(ConsoleQueueTest, BlockedThenWritableWritesEverySourceInOrder) {
  ConsoleQueue q(1 << 10);
  std::string want;
  for (int i = 0; i < 100; ++i) {
    std::string line = "[rank" + std::to_string(i % 2) + "]: line " + std::to_string(i) + "\n";
    q.Push(i % 2, line);
    want += line;
  }
  std::vector<long> script = {7, -EAGAIN, 5, 1, -EAGAIN};
  script.resize(script.size() + 100, kAll);  // then it takes every chunk
  FakeConsole console(script);
  EXPECT_EQ(q.Flush(console.Fn(), nullptr), ConsoleQueue::Flushed::kBlocked);
  EXPECT_EQ(q.Flush(console.Fn(), nullptr), ConsoleQueue::Flushed::kBlocked);
  EXPECT_EQ(q.Flush(console.Fn(), nullptr), ConsoleQueue::Flushed::kEmpty);
  EXPECT_EQ(console.taken, want);
  EXPECT_TRUE(q.empty());
}

TEST(ConsoleQueueTest, ClosedQueueDiscardsLaterPushes) {
  ConsoleQueue q(4);
  q.Push(0, "a\n");
  FakeConsole console({-EPIPE});
  EXPECT_EQ(q.Flush(console.Fn(), nullptr), ConsoleQueue::Flushed::kClosed);
  q.Push(0, "bbbbbb\n");
  EXPECT_TRUE(q.closed());
  EXPECT_TRUE(q.empty());
  EXPECT_FALSE(q.over_limit(0));  // a closed console never holds a worker back
}

TEST(ConsoleQueueTest, DiscardReportsTheBytesDropped) {
  ConsoleQueue q(4);
  q.Push(0, "abc\n");
  q.Push(1, "de\n");
  EXPECT_EQ(q.Discard(), 7u);
  EXPECT_EQ(q.queued(0), 0u);
  EXPECT_FALSE(q.over_limit(0));
}

}  // namespace
}  // namespace elastic
