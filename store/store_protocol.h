// The TCPStore wire protocol (docs/design.md, "TCPStore wire protocol"): framing, the two
// dialects, and an incremental frame parser.
//
// The parser is a pure function over bytes: given what a connection has
// buffered it returns one complete request, "need more bytes", or a protocol
// error with a reason. It depends on nothing but the standard library so the
// libFuzzer target can build it alone with clang.
//
// Framing: 1-byte opcode, then arguments. Integers are native little-endian;
// strings are uint64 length + bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace elastic {

// Every bound of the store, in one place (docs/security.md, "The workers'
// store: limits"). The parser uses the first four; StoreState the memory
// budget; StoreServer the rest. A client that breaks one is disconnected with
// a logged reason; the store and the other clients go on.
struct StoreLimits {
  // --- requests (parser) ---
  size_t max_key = 8 * 1024;       // bytes of one key
  size_t max_value = 8 << 20;      // bytes of one value, also after APPEND
  size_t max_multi_keys = 128 * 1024;  // keys of one CHECK/WAIT/MULTI_GET/MULTI_SET
  // Bytes a connection may buffer for one frame before it completes (a
  // MULTI_SET may be larger than one value). 0: two values (16 MiB + change).
  size_t max_frame = 0;
  // Bytes buffered for frames not yet complete, over all connections: the
  // connection whose read passes it is closed (many half-sent MULTI_SETs).
  size_t max_input_total = size_t{256} << 20;
  // --- keyspace (StoreState) ---
  // What the keyspace, the queues and the pending WAITs' missing keys hold,
  // per-entry overhead included (StoreState::bytes(): within a few percent of
  // the RSS). A network write or WAIT that would exceed it closes that
  // client's connection; the in-process API ignores it.
  size_t memory_budget = size_t{1} << 30;
  // --- connections (StoreServer) ---
  // Store connections at most; 0: RLIMIT_NOFILE (after raising it) less
  // fd_reserve, at least half of it. Connections beyond are accepted and
  // closed at once (counted; logged rate-limited).
  size_t max_connections = 0;
  size_t fd_reserve = 256;  // descriptors kept for the agent: workers, pipes, pidfds
  // Stop executing a connection's requests while this much of its output is
  // unread; resume when the socket drains.
  size_t output_high_water = 4 << 20;
  // A connection whose unread output would exceed this (one big MULTI_GET, or
  // 1.13 watch callbacks piling up) is closed instead of buffered.
  size_t max_output = 64 << 20;
  // Unread output over all connections: a reply that would pass it closes
  // its connection, as max_output does.
  size_t max_output_total = size_t{512} << 20;
  // Pending WAITs + BARRIERs, and WATCH_KEYs, per connection (PyTorch clients
  // have one request in flight).
  size_t max_waits_per_connection = 4096;
  size_t max_watches_per_connection = 4096;
  // A connection that sent part of a frame and then nothing for this long is
  // closed (slowloris); so is one whose output stays above the high-water
  // mark this long (it stopped reading its replies).
  int64_t partial_frame_timeout_ms = 30'000;
  int64_t output_stall_timeout_ms = 30'000;
  // A frame must be complete this long after its first byte arrived, however
  // steadily it trickles in (1 byte every 29 s never trips the idle timeout
  // above). The default asks ~280 KB/s of the largest frame (16 MiB).
  int64_t frame_deadline_ms = 60'000;
  // Out of descriptors with no spare to refuse a client with: accepting
  // pauses until a connection closes or this long passed.
  int64_t accept_retry_ms = 1'000;
};

// Which client generation a connection speaks; fixed by its first bytes.
enum class StoreDialect {
  kUnknown,  // nothing decided yet
  kLegacy,   // PyTorch <= 1.13: SET=0 ... WATCH_KEY=7, DELETE_KEY=8
  kV2,       // PyTorch 2.x: VALIDATE=0, SET=1 ... DELETE_KEY=8, APPEND=9 ... QUEUE_LEN=16,
             // and from 2.14 LIST_KEYS=17, BARRIER=18
};

// Dialect-independent operations.
enum class StoreOp : uint8_t {
  kValidate,
  kSet,
  kCompareSet,
  kGet,
  kAdd,
  kCheck,
  kWait,
  kNumKeys,
  kWatchKey,
  kDeleteKey,
  kAppend,
  kMultiGet,
  kMultiSet,
  kCancelWait,
  kPing,
  kQueuePush,
  kQueuePop,
  kQueueLen,
  kListKeys,
  kBarrier,
};
const char* StoreOpName(StoreOp op);

// Wire constants.
inline constexpr uint32_t kStoreValidateMagic = 0x3C85F7CE;
namespace legacy_op {
inline constexpr uint8_t kSet = 0, kCompareSet = 1, kGet = 2, kAdd = 3, kCheck = 4, kWait = 5,
                         kGetNumKeys = 6, kWatchKey = 7, kDeleteKey = 8;
}
namespace v2_op {
inline constexpr uint8_t kValidate = 0, kSet = 1, kCompareSet = 2, kGet = 3, kAdd = 4, kCheck = 5,
                         kWait = 6, kGetNumKeys = 7, kDeleteKey = 8, kAppend = 9, kMultiGet = 10,
                         kMultiSet = 11, kCancelWait = 12, kPing = 13, kQueuePush = 14,
                         kQueuePop = 15, kQueueLen = 16, kListKeys = 17, kBarrier = 18;
}
// Reply bytes.
inline constexpr uint8_t kCheckReady = 0, kCheckNotReady = 1;
inline constexpr uint8_t kWaitStopWaiting = 0, kWaitCanceled = 1;
inline constexpr uint8_t kWatchKeyUpdated = 0, kWatchKeyCreated = 1, kWatchKeyDeleted = 2,
                         kWatchCallbackRegistered = 3;

// One parsed request. Views point into the buffer given to ParseStoreRequest
// and are valid until that buffer changes.
struct StoreRequest {
  StoreOp op = StoreOp::kPing;
  // kSet/kAppend/kQueuePush: key, value. kCompareSet: key, expected, desired.
  // kGet/kAdd/kWatchKey/kDeleteKey/kQueuePop/kQueueLen: key.
  // kCheck/kWait/kMultiGet: the keys. kMultiSet: key, value, key, value, ...
  // kBarrier: key (delta: the world size). kListKeys: none.
  std::vector<std::string_view> args;
  int64_t delta = 0;     // kAdd; kBarrier: world size
  uint32_t number = 0;   // kValidate: magic; kPing: nonce
};

// The largest request a connection may buffer (a MULTI_SET can be larger
// than one value; PyTorch sets no bound): limits.max_frame, or two values.
size_t MaxFrameBytes(const StoreLimits& limits);

enum class ParseStatus { kRequest, kNeedMore, kError };

struct ParseResult {
  ParseStatus status = ParseStatus::kNeedMore;
  size_t consumed = 0;  // kRequest: bytes of this frame
  size_t need = 0;      // kNeedMore: total buffered bytes needed before trying again
  std::string error;    // kError: why, for the log
};

// Parses the first frame in `buf`. While *dialect is kUnknown it is decided
// from the first 5 bytes (a 2.x client always starts with VALIDATE
// `00 CE F7 85 3C`; a legacy SET's uint64 key length can never start so).
// `req` is overwritten (its vector's capacity is reused).
ParseResult ParseStoreRequest(std::string_view buf, const StoreLimits& limits,
                              StoreDialect* dialect, StoreRequest* req);

// Encoding helpers, shared by the server's replies, the client and the tests.
void PutU8(std::string* out, uint8_t v);
void PutU32(std::string* out, uint32_t v);
void PutU64(std::string* out, uint64_t v);
void PutI64(std::string* out, int64_t v);
void PutString(std::string* out, std::string_view s);  // uint64 length + bytes

}  // namespace elastic
