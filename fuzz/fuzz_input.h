// Turns libFuzzer's bytes into the pieces a parser takes: a selector byte and
// newline-separated fields (so seeds stay readable text files).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace elastic::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size)
      : text_(reinterpret_cast<const char*>(data), size) {}

  // The first byte (0 when empty), then the rest is the text.
  unsigned char Selector() {
    if (text_.empty()) return 0;
    unsigned char c = static_cast<unsigned char>(text_.front());
    text_.remove_prefix(1);
    return c;
  }
  std::string_view Rest() const { return text_; }

  // Fields separated by '\n' (a trailing empty field is kept).
  std::vector<std::string> Lines() const {
    std::vector<std::string> out;
    size_t start = 0;
    while (true) {
      size_t nl = text_.find('\n', start);
      if (nl == std::string_view::npos) {
        out.emplace_back(text_.substr(start));
        return out;
      }
      out.emplace_back(text_.substr(start, nl - start));
      start = nl + 1;
    }
  }

 private:
  std::string_view text_;
};

// A field or "" when there are fewer.
inline const std::string& Field(const std::vector<std::string>& fields, size_t i) {
  static const std::string kEmpty;
  return i < fields.size() ? fields[i] : kEmpty;
}

}  // namespace elastic::fuzz
