#include "bench/store/store_codec.h"

#include <cstring>

#include "store/store_protocol.h"

namespace elastic::store_codec {
namespace {

void EncodeKeys(std::string* out, uint8_t op, const std::vector<std::string>& keys) {
  PutU8(out, op);
  PutU64(out, keys.size());
  for (const auto& k : keys) PutString(out, k);
}

}  // namespace

void EncodeSet(std::string* out, std::string_view key, std::string_view value) {
  PutU8(out, legacy_op::kSet);
  PutString(out, key);
  PutString(out, value);
}

void EncodeGet(std::string* out, std::string_view key) {
  PutU8(out, legacy_op::kGet);
  PutString(out, key);
}

void EncodeAdd(std::string* out, std::string_view key, int64_t delta) {
  PutU8(out, legacy_op::kAdd);
  PutString(out, key);
  PutI64(out, delta);
}

void EncodeCompareSet(std::string* out, std::string_view key, std::string_view expected,
                      std::string_view desired) {
  PutU8(out, legacy_op::kCompareSet);
  PutString(out, key);
  PutString(out, expected);
  PutString(out, desired);
}

void EncodeWait(std::string* out, const std::vector<std::string>& keys) { EncodeKeys(out, legacy_op::kWait, keys); }
void EncodeCheck(std::string* out, const std::vector<std::string>& keys) { EncodeKeys(out, legacy_op::kCheck, keys); }

void EncodeDeleteKey(std::string* out, std::string_view key) {
  PutU8(out, legacy_op::kDeleteKey);
  PutString(out, key);
}

void EncodeNumKeys(std::string* out) { PutU8(out, legacy_op::kGetNumKeys); }

size_t DecodeU8(std::string_view in, uint8_t* v) {
  if (in.empty()) return 0;
  *v = static_cast<uint8_t>(in[0]);
  return 1;
}

size_t DecodeI64(std::string_view in, int64_t* v) {
  if (in.size() < 8) return 0;
  std::memcpy(v, in.data(), 8);
  return 8;
}

size_t DecodeString(std::string_view in, std::string* v) {
  uint64_t len = 0;
  if (in.size() < 8) return 0;
  std::memcpy(&len, in.data(), 8);
  if (in.size() - 8 < len) return 0;
  v->assign(in.data() + 8, len);
  return 8 + len;
}

}  // namespace elastic::store_codec
