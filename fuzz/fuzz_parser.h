// The invariants every typed parser of common/ shares, for its fuzz target:
// `parse("OPT", text, &value, &err)` either fails with an error that starts by
// naming the option and quoting the whole value (OPT: '<text>'), or succeeds
// with a value that `format` prints as text `parse` reads back to the same
// value. Aborts (a fuzz finding) otherwise.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

namespace elastic::fuzz {

template <typename T, typename Parse, typename Format>
std::optional<T> CheckParser(std::string_view text, Parse parse, Format format) {
  T value{};
  std::string err;
  if (!parse("OPT", text, &value, &err)) {
    if (err.rfind("OPT: '" + std::string(text) + "'", 0) != 0) std::abort();
    return std::nullopt;
  }
  T again{};
  if (!parse("OPT", format(value), &again, &err) || !(again == value)) std::abort();
  return value;
}

}  // namespace elastic::fuzz
