#include "launcher/host_runner_message.h"

#include <gtest/gtest.h>

using namespace std::string_literals;

namespace elastic {
namespace {

TEST(HostRunnerMessage, RunRequestFieldsInOrderAndBack) {
  HostRequest r;
  r.id = 3;
  r.command = "scontrol requeue 5";
  r.timeout_ms = 10000;
  r.env = {"SLURM_CONF=/etc/slurm/slurm.conf", "A="};
  std::string wire = EncodeHostRequest(r);
  EXPECT_EQ(wire, "run\0id\0" "3\0command\0scontrol requeue 5\0timeout_ms\0" "10000\0"
                  "env\0SLURM_CONF=/etc/slurm/slurm.conf\0env\0A=\0"s);
  HostRequest back;
  std::string err;
  ASSERT_TRUE(ParseHostRequest(wire, &back, &err)) << err;
  EXPECT_EQ(back.kind, HostRequestKind::kRun);
  EXPECT_EQ(back.id, 3u);
  EXPECT_EQ(back.command, r.command);
  EXPECT_EQ(back.timeout_ms, 10000);
  EXPECT_EQ(back.env, r.env);
}

TEST(HostRunnerMessage, CancelRequest) {
  HostRequest r;
  r.kind = HostRequestKind::kCancel;
  r.id = 7;
  EXPECT_EQ(EncodeHostRequest(r), "cancel\0id\0" "7\0"s);
  HostRequest back;
  std::string err;
  ASSERT_TRUE(ParseHostRequest(EncodeHostRequest(r), &back, &err)) << err;
  EXPECT_EQ(back.kind, HostRequestKind::kCancel);
  EXPECT_EQ(back.id, 7u);
}

TEST(HostRunnerMessage, RepliesRoundTrip) {
  struct Row {
    HostReply reply;
    std::string wire;
  } rows[] = {
      {{HostReplyKind::kDone, 3, 1, 0, false, ""}, "done\0id\0" "3\0exit_code\0" "1\0timed_out\0" "0\0"s},
      {{HostReplyKind::kDone, 4, 0, 9, true, ""}, "done\0id\0" "4\0signal\0" "9\0timed_out\0" "1\0"s},
      {{HostReplyKind::kError, 5, 0, 0, false, "busy"}, "error\0id\0" "5\0reason\0busy\0"s},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(EncodeHostReply(row.reply), row.wire);
    HostReply back;
    std::string err;
    ASSERT_TRUE(ParseHostReply(row.wire, &back, &err)) << err;
    EXPECT_EQ(back.kind, row.reply.kind);
    EXPECT_EQ(back.id, row.reply.id);
    EXPECT_EQ(back.exit_code, row.reply.exit_code);
    EXPECT_EQ(back.signal, row.reply.signal);
    EXPECT_EQ(back.timed_out, row.reply.timed_out);
    EXPECT_EQ(back.reason, row.reply.reason);
  }
}

TEST(HostRunnerMessage, BadRequestsNameWhatIsWrong) {
  struct Row {
    std::string wire;
    std::string error_part;
  } rows[] = {
      {""s, "empty host runner request"},
      {"run\0id\0" "1"s, "not NUL-terminated"},
      {"run\0id\0"s, "a key without a value"},
      {"launch\0id\0" "1\0"s, "unknown kind 'launch'"},
      {"run\0command\0true\0timeout_ms\0" "5\0"s, "without an id"},
      {"run\0id\0" "0\0command\0true\0timeout_ms\0" "5\0"s, "id"},
      {"run\0id\0-3\0command\0true\0timeout_ms\0" "5\0"s, "id"},
      {"run\0id\0" "1\0timeout_ms\0" "5\0"s, "without a command"},
      {"run\0id\0" "1\0command\0\0timeout_ms\0" "5\0"s, "without a command"},
      {"run\0id\0" "1\0command\0true\0"s, "timeout_ms"},
      {"run\0id\0" "1\0command\0true\0timeout_ms\0" "0\0"s, "timeout_ms"},
      {"run\0id\0" "1\0command\0true\0timeout_ms\0" "99999999999\0"s, "timeout_ms"},
      {"run\0id\0" "1\0command\0true\0timeout_ms\0" "5\0env\0NOEQUALS\0"s, "is not KEY=VALUE"},
      {"run\0id\0" "1\0command\0true\0timeout_ms\0" "5\0env\0=x\0"s, "is not KEY=VALUE"},
      {"cancel\0id\0" "1\0command\0true\0"s, "unknown key 'command'"},
      {"run\0id\0" "1\0command\0true\0timeout_ms\0" "5\0cwd\0/\0"s, "unknown key 'cwd'"},
      {"run\0"s + std::string(kMaxHostRunnerMessage, 'x'), "bytes (at most"},
  };
  for (const Row& row : rows) {
    HostRequest r;
    std::string err;
    EXPECT_FALSE(ParseHostRequest(row.wire, &r, &err)) << row.error_part;
    EXPECT_NE(err.find(row.error_part), std::string::npos) << "'" << err << "' lacks '" << row.error_part << "'";
  }
}

TEST(HostRunnerMessage, BadRepliesNameWhatIsWrong) {
  struct Row {
    std::string wire;
    std::string error_part;
  } rows[] = {
      {"done\0id\0" "1\0"s, "without an exit_code or a signal"},
      {"done\0exit_code\0" "0\0"s, "without an id"},
      {"done\0id\0" "1\0exit_code\0" "256\0"s, "exit_code"},
      {"done\0id\0" "1\0signal\0" "0\0"s, "signal"},
      {"done\0id\0" "1\0signal\0" "65\0"s, "signal"},
      {"done\0id\0" "1\0exit_code\0" "0\0signal\0" "9\0"s, "repeated key 'signal'"},
      {"done\0id\0" "1\0exit_code\0" "0\0timed_out\0yes\0"s, "timed_out 'yes'"},
      {"error\0id\0" "1\0"s, "without a reason"},
      {"error\0id\0" "1\0reason\0\0"s, "without a reason"},
      {"spawned\0id\0" "1\0"s, "unknown kind 'spawned'"},
      {"done\0id\0" "1\0reason\0x\0exit_code\0" "0\0"s, "unknown or repeated key 'reason'"},
  };
  for (const Row& row : rows) {
    HostReply r;
    std::string err;
    EXPECT_FALSE(ParseHostReply(row.wire, &r, &err)) << row.error_part;
    EXPECT_NE(err.find(row.error_part), std::string::npos) << "'" << err << "' lacks '" << row.error_part << "'";
  }
}

}  // namespace
}  // namespace elastic
