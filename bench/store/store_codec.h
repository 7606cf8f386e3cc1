// Non-blocking building blocks of the 1.13-dialect client side, for code that
// drives its own sockets from an event loop (the benchmark's load generator):
// encode requests into a buffer, decode replies incrementally from a buffer.
// Each Decode* returns the bytes consumed, or 0 if the reply is not complete.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace elastic::store_codec {

void EncodeSet(std::string* out, std::string_view key, std::string_view value);
void EncodeGet(std::string* out, std::string_view key);
void EncodeAdd(std::string* out, std::string_view key, int64_t delta);
void EncodeCompareSet(std::string* out, std::string_view key, std::string_view expected, std::string_view desired);
void EncodeWait(std::string* out, const std::vector<std::string>& keys);
void EncodeCheck(std::string* out, const std::vector<std::string>& keys);
void EncodeDeleteKey(std::string* out, std::string_view key);
void EncodeNumKeys(std::string* out);

size_t DecodeU8(std::string_view in, uint8_t* v);
size_t DecodeI64(std::string_view in, int64_t* v);
size_t DecodeString(std::string_view in, std::string* v);

}  // namespace elastic::store_codec
