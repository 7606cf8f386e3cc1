#include "store/store_protocol.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <iterator>

namespace elastic {
namespace {

// Frames are little-endian on the wire; this code assumes a little-endian host
// (x86-64, aarch64), as PyTorch's own TCPStore does.
static_assert(std::endian::native == std::endian::little, "TCPStore framing is host-endian");

// Reads fields sequentially; the first shortfall records how many bytes the
// whole frame needs at least, the first violation records an error.
class Reader {
 public:
  Reader(std::string_view buf, const StoreLimits& limits) : buf_(buf), limits_(limits) {}

  bool U32(uint32_t* v) { return Fixed(v, sizeof *v); }
  bool U64(uint64_t* v) { return Fixed(v, sizeof *v); }
  bool I64(int64_t* v) { return Fixed(v, sizeof *v); }

  // A length-prefixed string no longer than `max`.
  bool String(size_t max, const char* what, std::string_view* out) {
    uint64_t len = 0;
    if (!U64(&len)) return false;
    if (len > max) {
      return Fail(std::string(what) + " of " + std::to_string(len) + " bytes exceeds the limit of " +
                  std::to_string(max));
    }
    if (buf_.size() - pos_ < len) return Short(len);
    *out = buf_.substr(pos_, len);
    pos_ += len;
    return true;
  }
  bool Key(std::string_view* out) { return String(limits_.max_key, "key", out); }
  bool Value(std::string_view* out) { return String(limits_.max_value, "value", out); }

  bool Count(const char* what, uint64_t* n) {
    if (!U64(n)) return false;
    if (*n > limits_.max_multi_keys) {
      return Fail(std::string(what) + " with " + std::to_string(*n) + " keys exceeds the limit of " +
                  std::to_string(limits_.max_multi_keys));
    }
    return true;
  }

  bool Fail(std::string reason) {
    error_ = std::move(reason);
    failed_ = true;
    return false;
  }
  bool failed() const { return failed_; }
  std::string& error() { return error_; }
  size_t pos() const { return pos_; }
  size_t need() const { return need_; }
  void Skip(size_t n) { pos_ += n; }

 private:
  template <typename T>
  bool Fixed(T* v, size_t n) {
    if (buf_.size() - pos_ < n) return Short(n);
    std::memcpy(v, buf_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool Short(uint64_t n) {
    need_ = pos_ + n;
    return false;
  }

  std::string_view buf_;
  const StoreLimits& limits_;
  size_t pos_ = 0;
  size_t need_ = 0;
  bool failed_ = false;
  std::string error_;
};

bool MapOpcode(StoreDialect dialect, uint8_t code, StoreOp* op) {
  static constexpr StoreOp kLegacy[] = {
      StoreOp::kSet,  StoreOp::kCompareSet, StoreOp::kGet,      StoreOp::kAdd,      StoreOp::kCheck,
      StoreOp::kWait, StoreOp::kNumKeys,    StoreOp::kWatchKey, StoreOp::kDeleteKey};
  static constexpr StoreOp kV2[] = {
      StoreOp::kValidate,  StoreOp::kSet,      StoreOp::kCompareSet, StoreOp::kGet,
      StoreOp::kAdd,       StoreOp::kCheck,    StoreOp::kWait,       StoreOp::kNumKeys,
      StoreOp::kDeleteKey, StoreOp::kAppend,   StoreOp::kMultiGet,   StoreOp::kMultiSet,
      StoreOp::kCancelWait, StoreOp::kPing,    StoreOp::kQueuePush,  StoreOp::kQueuePop,
      StoreOp::kQueueLen,  StoreOp::kListKeys, StoreOp::kBarrier};
  if (dialect == StoreDialect::kLegacy) {
    if (code >= std::size(kLegacy)) return false;
    *op = kLegacy[code];
  } else {
    if (code >= std::size(kV2)) return false;
    *op = kV2[code];
  }
  return true;
}

// Reads the arguments of `req->op` after the opcode byte.
bool ReadArgs(Reader& r, StoreRequest* req) {
  auto& a = req->args;
  std::string_view s1, s2, s3;
  switch (req->op) {
    case StoreOp::kValidate:
      if (!r.U32(&req->number)) return false;
      if (req->number != kStoreValidateMagic) return r.Fail("VALIDATE with a wrong magic number");
      return true;
    case StoreOp::kPing:
      return r.U32(&req->number);
    case StoreOp::kNumKeys:
    case StoreOp::kCancelWait:
    case StoreOp::kListKeys:
      return true;
    case StoreOp::kSet:
    case StoreOp::kAppend:
    case StoreOp::kQueuePush:
      if (!r.Key(&s1) || !r.Value(&s2)) return false;
      a = {s1, s2};
      return true;
    case StoreOp::kCompareSet:
      if (!r.Key(&s1) || !r.Value(&s2) || !r.Value(&s3)) return false;
      a = {s1, s2, s3};
      return true;
    case StoreOp::kAdd:
    case StoreOp::kBarrier:
      if (!r.Key(&s1) || !r.I64(&req->delta)) return false;
      a = {s1};
      return true;
    case StoreOp::kGet:
    case StoreOp::kWatchKey:
    case StoreOp::kDeleteKey:
    case StoreOp::kQueuePop:
    case StoreOp::kQueueLen:
      if (!r.Key(&s1)) return false;
      a = {s1};
      return true;
    case StoreOp::kCheck:
    case StoreOp::kWait:
    case StoreOp::kMultiGet: {
      uint64_t n = 0;
      if (!r.Count(StoreOpName(req->op), &n)) return false;
      a.clear();
      for (uint64_t i = 0; i < n; ++i) {
        if (!r.Key(&s1)) return false;
        a.push_back(s1);
      }
      return true;
    }
    case StoreOp::kMultiSet: {
      uint64_t n = 0;
      if (!r.Count("MULTI_SET", &n)) return false;
      a.clear();
      for (uint64_t i = 0; i < n; ++i) {
        if (!r.Key(&s1) || !r.Value(&s2)) return false;
        a.push_back(s1);
        a.push_back(s2);
      }
      return true;
    }
  }
  return r.Fail("unhandled operation");
}

}  // namespace

const char* StoreOpName(StoreOp op) {
  switch (op) {
    case StoreOp::kValidate: return "VALIDATE";
    case StoreOp::kSet: return "SET";
    case StoreOp::kCompareSet: return "COMPARE_SET";
    case StoreOp::kGet: return "GET";
    case StoreOp::kAdd: return "ADD";
    case StoreOp::kCheck: return "CHECK";
    case StoreOp::kWait: return "WAIT";
    case StoreOp::kNumKeys: return "GETNUMKEYS";
    case StoreOp::kWatchKey: return "WATCH_KEY";
    case StoreOp::kDeleteKey: return "DELETE_KEY";
    case StoreOp::kAppend: return "APPEND";
    case StoreOp::kMultiGet: return "MULTI_GET";
    case StoreOp::kMultiSet: return "MULTI_SET";
    case StoreOp::kCancelWait: return "CANCEL_WAIT";
    case StoreOp::kPing: return "PING";
    case StoreOp::kQueuePush: return "QUEUE_PUSH";
    case StoreOp::kQueuePop: return "QUEUE_POP";
    case StoreOp::kQueueLen: return "QUEUE_LEN";
    case StoreOp::kListKeys: return "LIST_KEYS";
    case StoreOp::kBarrier: return "BARRIER";
  }
  return "?";
}

ParseResult ParseStoreRequest(std::string_view buf, const StoreLimits& limits,
                              StoreDialect* dialect, StoreRequest* req) {
  ParseResult res;
  if (buf.empty()) {
    res.need = 1;
    return res;
  }
  if (*dialect == StoreDialect::kUnknown) {
    if (buf[0] != 0) {
      *dialect = StoreDialect::kLegacy;
    } else if (buf.size() < 5) {
      // Opcode 0 is VALIDATE (2.x) or SET (legacy); the next 4 bytes decide.
      // A legacy SET frame is at least 17 bytes, so waiting for 5 is safe.
      res.need = 5;
      return res;
    } else {
      uint32_t magic = 0;
      std::memcpy(&magic, buf.data() + 1, 4);
      *dialect = magic == kStoreValidateMagic ? StoreDialect::kV2 : StoreDialect::kLegacy;
    }
  }
  uint8_t code = static_cast<uint8_t>(buf[0]);
  if (!MapOpcode(*dialect, code, &req->op)) {
    res.status = ParseStatus::kError;
    res.error = "unknown opcode " + std::to_string(code) +
                (*dialect == StoreDialect::kLegacy ? " (1.13 dialect)" : " (2.x dialect)");
    return res;
  }
  req->args.clear();
  req->delta = 0;
  req->number = 0;
  Reader r(buf, limits);
  r.Skip(1);
  if (ReadArgs(r, req)) {
    res.status = ParseStatus::kRequest;
    res.consumed = r.pos();
  } else if (r.failed()) {
    res.status = ParseStatus::kError;
    res.error = std::string(StoreOpName(req->op)) + ": " + r.error();
  } else if (r.need() > MaxFrameBytes(limits)) {
    res.status = ParseStatus::kError;
    res.error = std::string(StoreOpName(req->op)) + ": request of at least " + std::to_string(r.need()) +
                " bytes exceeds the limit of " + std::to_string(MaxFrameBytes(limits));
  } else {
    res.need = r.need();
  }
  return res;
}

size_t MaxFrameBytes(const StoreLimits& limits) {
  size_t one = limits.max_value + limits.max_key + 64;  // one SET must always fit
  return limits.max_frame != 0 ? std::max(limits.max_frame, one) : 2 * one;
}

void PutU8(std::string* out, uint8_t v) { out->push_back(static_cast<char>(v)); }
void PutU32(std::string* out, uint32_t v) { out->append(reinterpret_cast<const char*>(&v), sizeof v); }
void PutU64(std::string* out, uint64_t v) { out->append(reinterpret_cast<const char*>(&v), sizeof v); }
void PutI64(std::string* out, int64_t v) { out->append(reinterpret_cast<const char*>(&v), sizeof v); }
void PutString(std::string* out, std::string_view s) {
  PutU64(out, s.size());
  out->append(s);
}

}  // namespace elastic
