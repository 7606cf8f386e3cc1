#include "rendezvous/messages.h"

#include <gtest/gtest.h>

#include "rendezvous/frame.h"

namespace elastic {
namespace {

Message Decode(const std::string& frame) {
  FrameReader reader(1 << 20);
  reader.Feed(frame);
  std::string payload, err;
  EXPECT_EQ(reader.Next(&payload, &err), FrameReader::Result::kFrame);
  Message msg;
  EXPECT_TRUE(DecodeMessage(payload, &msg, &err)) << err;
  return msg;
}

TEST(MessagesTest, RoundInfoRoundTrips) {
  RoundInfo in;
  in.round = 4;
  in.group_rank = 1;
  in.group_world_size = 3;
  in.rank_offset = 2;
  in.world_size = 6;
  in.store_addr = "10.1.2.3";
  in.store_port = 40000;
  in.use_agent_store = true;
  in.restarts_used = 2;
  Message msg = Decode(EncodeMessage("round", RoundToJson(in)));
  EXPECT_EQ(msg.type, "round");
  RoundInfo out;
  std::string err;
  ASSERT_TRUE(RoundFromJson(msg.body, &out, &err)) << err;
  EXPECT_EQ(out.round, 4u);
  EXPECT_EQ(out.group_rank, 1);
  EXPECT_EQ(out.rank_offset, 2);
  EXPECT_EQ(out.world_size, 6);
  EXPECT_EQ(out.store_addr, "10.1.2.3");
  EXPECT_EQ(out.store_port, 40000);
  EXPECT_TRUE(out.use_agent_store);
  EXPECT_EQ(out.restarts_used, 2);
}

TEST(MessagesTest, RoundWithOutOfRangeValuesIsRefused) {
  RoundInfo in;
  nlohmann::json j = RoundToJson(in);
  j["group_rank"] = 5;  // >= group_world_size
  RoundInfo out;
  std::string err;
  EXPECT_FALSE(RoundFromJson(j, &out, &err));
  j = RoundToJson(in);
  j["store_port"] = "http";
  EXPECT_FALSE(RoundFromJson(j, &out, &err));
  EXPECT_NE(err.find("store_port"), std::string::npos);
}

TEST(MessagesTest, WorkerFailureRoundTrips) {
  WorkerFailure in;
  in.global_rank = 3;
  in.local_rank = 1;
  in.host = "node7";
  in.exit_code = 0;
  in.signal = 9;
  in.time_unix_ms = 1234567;
  in.message = "boom";
  in.traceback = "Traceback ...\n";
  WorkerFailure out;
  std::string err;
  ASSERT_TRUE(FailureFromJson(FailureToJson(in), &out, &err)) << err;
  EXPECT_EQ(out.global_rank, 3);
  EXPECT_EQ(out.host, "node7");
  EXPECT_EQ(out.signal, 9);
  EXPECT_EQ(out.time_unix_ms, 1234567);
  EXPECT_EQ(out.traceback, "Traceback ...\n");
}

TEST(MessagesTest, InvalidUtf8IsReplacedNotThrown) {
  Message msg = Decode(EncodeMessage("fatal", {{"message", std::string("bad \xff byte")}}));
  EXPECT_EQ(msg.type, "fatal");
}

}  // namespace
}  // namespace elastic
