#include "launcher/zygote_request.h"

#include <gtest/gtest.h>

using namespace std::string_literals;

namespace elastic {
namespace {

TEST(ZygoteRequest, SpawnRequestFieldsInOrder) {
  SpawnRequest r;
  r.target = "train.py";
  r.args = {"--lr", "0.1"};
  r.env = {"RANK=1", "A="};
  r.cwd = "/w";
  r.agent = 42;
  r.default_signals = {15, 10};
  r.cpu_mask = {0xf0, 0x1};
  r.mem_mode = 1;
  r.mem_nodes = {0x2};
  r.maxnode = 64;
  EXPECT_EQ(EncodeSpawnRequest(r),
            "spawn\0script\0train.py\0arg\0--lr\0arg\0" "0.1\0env\0RANK=1\0env\0A=\0cwd\0/w\0"
            "agent\0" "42\0default_signal\0" "15\0default_signal\0" "10\0cpu_mask\0f0,1\0"
            "mem_mode\0" "1\0mem_nodes\0" "2\0maxnode\0" "64\0"s);
}

TEST(ZygoteRequest, ModuleUnboundNoMemoryPolicy) {
  SpawnRequest r;
  r.module = true;
  r.target = "pkg.main";
  r.cwd = "/";
  r.agent = 7;
  EXPECT_EQ(EncodeSpawnRequest(r), "spawn\0module\0pkg.main\0cwd\0/\0agent\0" "7\0"s);
}

TEST(ZygoteRequest, FrameHeaderRoundTripAndLimit) {
  EXPECT_EQ(FrameHeader(0x010203), "\x03\x02\x01\x00"s);
  size_t n = 0;
  std::string err;
  ASSERT_TRUE(ParseFrameHeader(FrameHeader(12345), &n, &err)) << err;
  EXPECT_EQ(n, 12345u);
  EXPECT_FALSE(ParseFrameHeader(FrameHeader(kMaxZygoteFrame + 1), &n, &err));
  EXPECT_NE(err.find("at most"), std::string::npos) << err;
  EXPECT_FALSE(ParseFrameHeader("abc", &n, &err));
}

struct ReplyCase {
  const char* name;
  std::string payload;
  bool ok;
  ZygoteReplyKind kind;
  pid_t pid;
  const char* reason_or_error;  // the reason when ok, a piece of the error otherwise
};

TEST(ZygoteRequest, ParseReplyTable) {
  const ReplyCase cases[] = {
      {"ready", "ready\0pid\0" "100\0modules\0torch,numpy\0"s, true, ZygoteReplyKind::kReady, 100, ""},
      {"spawned", "spawned\0pid\0" "4242\0"s, true, ZygoteReplyKind::kSpawned, 4242, ""},
      {"unfit", "unfit\0reason\0import started 3 threads\0"s, true, ZygoteReplyKind::kUnfit, 0,
       "import started 3 threads"},
      {"error", "error\0reason\0fork: EAGAIN\0"s, true, ZygoteReplyKind::kError, 0, "fork: EAGAIN"},
      {"empty", "", false, {}, 0, "not NUL-terminated"},
      {"unterminated", "ready\0pid\0" "1"s, false, {}, 0, "not NUL-terminated"},
      {"key without value", "spawned\0pid\0"s, false, {}, 0, "without a value"},
      {"unknown kind", "hello\0"s, false, {}, 0, "unknown kind 'hello'"},
      {"unknown key", "spawned\0pid\0" "5\0color\0red\0"s, false, {}, 0, "unknown key 'color'"},
      {"spawned without pid", "spawned\0"s, false, {}, 0, "without a pid"},
      {"pid 1 is not a worker", "spawned\0pid\0" "1\0"s, false, {}, 0, "pid"},
      {"pid not a number", "spawned\0pid\0x1\0"s, false, {}, 0, "pid"},
      {"negative pid", "ready\0pid\0-5\0"s, false, {}, 0, "pid"},
      {"error without reason", "error\0"s, false, {}, 0, "without a reason"},
  };
  for (const ReplyCase& c : cases) {
    ZygoteReply r;
    std::string err;
    bool ok = ParseZygoteReply(c.payload, &r, &err);
    ASSERT_EQ(ok, c.ok) << c.name << ": " << err;
    if (ok) {
      EXPECT_EQ(r.kind, c.kind) << c.name;
      EXPECT_EQ(r.pid, c.pid) << c.name;
      EXPECT_EQ(r.reason, c.reason_or_error) << c.name;
    } else {
      EXPECT_NE(err.find(c.reason_or_error), std::string::npos) << c.name << ": " << err;
    }
  }
}

}  // namespace
}  // namespace elastic
