#include "rendezvous/frame.h"

#include <gtest/gtest.h>

#include "rendezvous/messages.h"

namespace elastic {
namespace {

using R = FrameReader::Result;

TEST(FrameTest, RoundTripsFramesFedByteByByte) {
  std::string wire = EncodeFrame("hello") + EncodeFrame("") + EncodeFrame("world!");
  FrameReader reader(1024);
  std::vector<std::string> got;
  std::string payload, err;
  for (char c : wire) {
    reader.Feed(std::string_view(&c, 1));
    while (reader.Next(&payload, &err) == R::kFrame) got.push_back(payload);
  }
  EXPECT_EQ(got, (std::vector<std::string>{"hello", "", "world!"}));
  EXPECT_EQ(reader.buffered(), 0u);
}

TEST(FrameTest, TruncatedFrameWaitsForMore) {
  std::string wire = EncodeFrame("truncated payload");
  FrameReader reader(1024);
  reader.Feed(std::string_view(wire).substr(0, wire.size() - 1));
  std::string payload, err;
  EXPECT_EQ(reader.Next(&payload, &err), R::kNeedMore);
  reader.Feed(std::string_view(wire).substr(wire.size() - 1));
  EXPECT_EQ(reader.Next(&payload, &err), R::kFrame);
  EXPECT_EQ(payload, "truncated payload");
}

TEST(FrameTest, OversizedFrameIsRefusedFromItsHeaderAlone) {
  FrameReader reader(16);
  reader.Feed(std::string("\x00\x00\x00\x11", 4));  // 17 bytes announced, none sent
  std::string payload, err;
  EXPECT_EQ(reader.Next(&payload, &err), R::kError);
  EXPECT_NE(err.find("exceeds the limit of 16"), std::string::npos) << err;
  reader.Feed(EncodeFrame("ok"));
  EXPECT_EQ(reader.Next(&payload, &err), R::kError);  // sticky
}

TEST(FrameTest, HugeLengthFromGarbageIsRefused) {
  FrameReader reader(1 << 20);
  reader.Feed("GET / HTTP/1.1\r\n\r\n");
  std::string payload, err;
  EXPECT_EQ(reader.Next(&payload, &err), R::kError);
}

TEST(FrameTest, GarbagePayloadIsNotAMessage) {
  Message msg;
  std::string err;
  EXPECT_FALSE(DecodeMessage("\xff\xfe{not json", &msg, &err));
  EXPECT_FALSE(DecodeMessage("[1,2,3]", &msg, &err));
  EXPECT_FALSE(DecodeMessage("{\"type\": 5}", &msg, &err));
  EXPECT_FALSE(DecodeMessage("", &msg, &err));
  EXPECT_TRUE(DecodeMessage("{\"type\": \"join\", \"local_world_size\": 2}", &msg, &err));
  EXPECT_EQ(msg.type, "join");
}

}  // namespace
}  // namespace elastic
