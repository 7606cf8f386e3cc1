#include "store/store_protocol.h"

#include <gtest/gtest.h>

#include "testing/store_test_util.h"

namespace elastic {
namespace {

using namespace testing;  // store_test_util.h: ServerThread, RawClient, the frame builders

ParseResult Parse(const std::string& bytes, StoreDialect* d, StoreRequest* req, StoreLimits limits = {}) {
  return ParseStoreRequest(bytes, limits, d, req);
}

TEST(StoreProtocol, LegacySetIsOneFrame) {
  std::string f = KeyValue(legacy_op::kSet, "/k", "value");
  StoreDialect d = StoreDialect::kUnknown;
  StoreRequest req;
  ParseResult r = Parse(f, &d, &req);
  ASSERT_EQ(r.status, ParseStatus::kRequest);
  EXPECT_EQ(d, StoreDialect::kLegacy);
  EXPECT_EQ(r.consumed, f.size());
  EXPECT_EQ(req.op, StoreOp::kSet);
  ASSERT_EQ(req.args.size(), 2u);
  EXPECT_EQ(req.args[0], "/k");
  EXPECT_EQ(req.args[1], "value");
}

TEST(StoreProtocol, ValidateSelectsV2Dialect) {
  StoreDialect d = StoreDialect::kUnknown;
  StoreRequest req;
  ParseResult r = Parse(V2Validate(), &d, &req);
  ASSERT_EQ(r.status, ParseStatus::kRequest);
  EXPECT_EQ(d, StoreDialect::kV2);
  EXPECT_EQ(req.op, StoreOp::kValidate);
  EXPECT_EQ(r.consumed, 5u);
  // In 2.x, opcode 1 is SET (in 1.13 it is COMPARE_SET).
  r = Parse(KeyValue(v2_op::kSet, "/a", "b"), &d, &req);
  ASSERT_EQ(r.status, ParseStatus::kRequest);
  EXPECT_EQ(req.op, StoreOp::kSet);
}

TEST(StoreProtocol, FirstByteZeroWaitsForFiveBytesToPickDialect) {
  StoreDialect d = StoreDialect::kUnknown;
  StoreRequest req;
  ParseResult r = Parse(std::string("\0\xCE\xF7", 3), &d, &req);
  EXPECT_EQ(r.status, ParseStatus::kNeedMore);
  EXPECT_EQ(r.need, 5u);
  EXPECT_EQ(d, StoreDialect::kUnknown);
}

TEST(StoreProtocol, LegacyAddCarriesDelta) {
  StoreDialect d = StoreDialect::kUnknown;
  StoreRequest req;
  std::string f = AddFrame(legacy_op::kAdd, "init/", -7);  // views point into f
  ParseResult r = Parse(f, &d, &req);
  ASSERT_EQ(r.status, ParseStatus::kRequest);
  EXPECT_EQ(req.op, StoreOp::kAdd);
  EXPECT_EQ(req.args[0], "init/");
  EXPECT_EQ(req.delta, -7);
}

TEST(StoreProtocol, EveryTruncationOfEveryFrameNeedsMore) {
  std::vector<std::pair<StoreDialect, std::string>> frames = {
      {StoreDialect::kLegacy, KeyValue(legacy_op::kSet, "/key", "some value")},
      {StoreDialect::kLegacy, Keys(legacy_op::kWait, {"/a", "/bb", "/ccc"})},
      {StoreDialect::kLegacy, AddFrame(legacy_op::kAdd, "/n", 3)},
      {StoreDialect::kV2, V2Ping(42)},
      {StoreDialect::kV2, Keys(v2_op::kMultiGet, {"/x", "/y"})},
  };
  {
    std::string cas = Frame(legacy_op::kCompareSet);
    PutString(&cas, "/k");
    PutString(&cas, "old");
    PutString(&cas, "new");
    frames.emplace_back(StoreDialect::kLegacy, cas);
  }
  for (auto& [dialect, f] : frames) {
    for (size_t len = 0; len < f.size(); ++len) {
      StoreDialect d = dialect;
      StoreRequest req;
      ParseResult r = Parse(f.substr(0, len), &d, &req);
      ASSERT_EQ(r.status, ParseStatus::kNeedMore) << "prefix " << len << " of " << f.size();
      EXPECT_GT(r.need, len);
      EXPECT_LE(r.need, f.size());
    }
    StoreDialect d = dialect;
    StoreRequest req;
    EXPECT_EQ(Parse(f, &d, &req).status, ParseStatus::kRequest);
  }
}

TEST(StoreProtocol, TwoFramesBackToBackParseOneAtATime) {
  std::string a = KeyValue(legacy_op::kSet, "/a", "1");
  std::string b = KeyOnly(legacy_op::kGet, "/a");
  std::string both = a + b;
  StoreDialect d = StoreDialect::kUnknown;
  StoreRequest req;
  ParseResult r = Parse(both, &d, &req);
  ASSERT_EQ(r.status, ParseStatus::kRequest);
  EXPECT_EQ(r.consumed, a.size());
  r = ParseStoreRequest(std::string_view(both).substr(r.consumed), {}, &d, &req);
  ASSERT_EQ(r.status, ParseStatus::kRequest);
  EXPECT_EQ(req.op, StoreOp::kGet);
}

TEST(StoreProtocol, V2ListKeysAndBarrierOf214) {
  StoreDialect d = StoreDialect::kV2;
  StoreRequest req;
  std::string list = Frame(v2_op::kListKeys);
  ASSERT_EQ(Parse(list, &d, &req).status, ParseStatus::kRequest);
  EXPECT_EQ(req.op, StoreOp::kListKeys);
  std::string barrier = AddFrame(v2_op::kBarrier, "/b", 16384);
  ParseResult r = Parse(barrier, &d, &req);
  ASSERT_EQ(r.status, ParseStatus::kRequest);
  EXPECT_EQ(r.consumed, barrier.size());
  EXPECT_EQ(req.op, StoreOp::kBarrier);
  ASSERT_EQ(req.args.size(), 1u);
  EXPECT_EQ(req.args[0], "/b");
  EXPECT_EQ(req.delta, 16384);
  // Past BARRIER nothing is defined: the connection is closed (as PyTorch does).
  EXPECT_EQ(Parse(Frame(19), &d, &req).status, ParseStatus::kError);
}

TEST(StoreProtocol, OversizedKeyIsAnErrorBeforeItsBytesArrive) {
  std::string f = Frame(legacy_op::kGet);
  PutU64(&f, 8 * 1024 + 1);  // only the length: the key itself never needs to arrive
  StoreDialect d = StoreDialect::kLegacy;
  StoreRequest req;
  ParseResult r = Parse(f, &d, &req);
  ASSERT_EQ(r.status, ParseStatus::kError);
  EXPECT_NE(r.error.find("key of 8193 bytes exceeds the limit of 8192"), std::string::npos) << r.error;
}

TEST(StoreProtocol, KeyAtTheLimitIsAccepted) {
  StoreDialect d = StoreDialect::kLegacy;
  StoreRequest req;
  EXPECT_EQ(Parse(KeyOnly(legacy_op::kGet, std::string(8 * 1024, 'k')), &d, &req).status, ParseStatus::kRequest);
}

TEST(StoreProtocol, OversizedValueIsAnError) {
  std::string f = Frame(legacy_op::kSet);
  PutString(&f, "/k");
  PutU64(&f, (8u << 20) + 1);
  StoreDialect d = StoreDialect::kLegacy;
  StoreRequest req;
  ParseResult r = Parse(f, &d, &req);
  ASSERT_EQ(r.status, ParseStatus::kError);
  EXPECT_NE(r.error.find("value of"), std::string::npos);
}

TEST(StoreProtocol, HugeLengthDoesNotOverflow) {
  std::string f = Frame(legacy_op::kSet);
  PutU64(&f, ~uint64_t{0});
  StoreDialect d = StoreDialect::kLegacy;
  StoreRequest req;
  EXPECT_EQ(Parse(f, &d, &req).status, ParseStatus::kError);
}

TEST(StoreProtocol, TooManyKeysInOneWaitIsAnError) {
  std::string f = Frame(legacy_op::kWait);
  PutU64(&f, 128 * 1024 + 1);
  StoreDialect d = StoreDialect::kLegacy;
  StoreRequest req;
  ParseResult r = Parse(f, &d, &req);
  ASSERT_EQ(r.status, ParseStatus::kError);
  EXPECT_NE(r.error.find("131073 keys"), std::string::npos) << r.error;
}

TEST(StoreProtocol, MultiSetLargerThanTheFrameLimitIsAnError) {
  StoreLimits small;
  small.max_value = 1 << 20;
  std::string f = Frame(v2_op::kMultiSet);
  PutU64(&f, 1000);
  std::string value(1 << 20, 'v');
  StoreDialect d = StoreDialect::kV2;
  StoreRequest req;
  // Pairs of 1 MiB keep arriving; the parser refuses once the frame passes two values.
  ParseResult r;
  for (int i = 0; i < 70; ++i) {
    PutString(&f, "/k" + std::to_string(i));
    PutString(&f, value);
    r = Parse(f, &d, &req, small);
    if (r.status != ParseStatus::kNeedMore) break;
  }
  ASSERT_EQ(r.status, ParseStatus::kError);
  EXPECT_NE(r.error.find("exceeds the limit"), std::string::npos) << r.error;
}

// An idle connection may not hold tens of MiB in a half-sent MULTI_SET: by
// default a frame is bounded by two values (~16 MiB), not 64 MiB.
TEST(StoreProtocol, DefaultFrameLimitIsTwoValues) {
  StoreLimits limits;
  EXPECT_LT(MaxFrameBytes(limits), size_t{17} << 20);
  EXPECT_GE(MaxFrameBytes(limits), 2 * limits.max_value);
  // Three 7 MiB values (each within max_value), all but the last byte sent.
  std::string f = Frame(v2_op::kMultiSet);
  PutU64(&f, 3);  // pairs
  for (int i = 0; i < 3; ++i) {
    PutString(&f, "/k" + std::to_string(i));
    PutString(&f, std::string(size_t{7} << 20, 'v'));
  }
  f.pop_back();
  StoreDialect d = StoreDialect::kV2;
  StoreRequest req;
  ParseResult r = Parse(f, &d, &req);
  ASSERT_EQ(r.status, ParseStatus::kError) << "a connection would buffer 21 MiB for one frame";
  limits.max_frame = size_t{64} << 20;  // settable
  EXPECT_EQ(MaxFrameBytes(limits), size_t{64} << 20);
  EXPECT_EQ(Parse(f, &d, &req, limits).status, ParseStatus::kNeedMore);
}

TEST(StoreProtocol, UnknownOpcodesAreErrorsInEachDialect) {
  StoreDialect legacy = StoreDialect::kUnknown;
  StoreRequest req;
  ParseResult r = Parse(std::string("\x09garbage"), &legacy, &req);
  ASSERT_EQ(r.status, ParseStatus::kError);
  EXPECT_NE(r.error.find("unknown opcode 9"), std::string::npos);
  StoreDialect v2 = StoreDialect::kV2;
  EXPECT_EQ(Parse(std::string("\x13"), &v2, &req).status, ParseStatus::kError);  // 19: past BARRIER
  EXPECT_EQ(Parse(std::string("\xff"), &v2, &req).status, ParseStatus::kError);
  // HTTP sent to the store port: 'G' = 71.
  StoreDialect d = StoreDialect::kUnknown;
  EXPECT_EQ(Parse("GET / HTTP/1.1\r\n\r\n", &d, &req).status, ParseStatus::kError);
}

TEST(StoreProtocol, ValidateWithWrongMagicIsAnError) {
  StoreDialect d = StoreDialect::kV2;
  StoreRequest req;
  std::string f = Frame(v2_op::kValidate);
  PutU32(&f, 0x12345678);
  EXPECT_EQ(Parse(f, &d, &req).status, ParseStatus::kError);
}

TEST(StoreProtocol, V2MultiSetAlternatesKeysAndValues) {
  std::string f = Frame(v2_op::kMultiSet);
  PutU64(&f, 2);
  PutString(&f, "/a");
  PutString(&f, "1");
  PutString(&f, "/b");
  PutString(&f, "2");
  StoreDialect d = StoreDialect::kV2;
  StoreRequest req;
  ASSERT_EQ(Parse(f, &d, &req).status, ParseStatus::kRequest);
  EXPECT_EQ(req.op, StoreOp::kMultiSet);
  EXPECT_EQ(req.args, (std::vector<std::string_view>{"/a", "1", "/b", "2"}));
}

}  // namespace
}  // namespace elastic
