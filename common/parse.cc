#include "common/parse.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

namespace elastic {

bool ParseInt(std::string_view text, long long min, long long max, long long* out) {
  if (text.empty()) return false;
  long long value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return false;
  if (value < min || value > max) return false;
  *out = value;
  return true;
}

bool ParseIntNamed(std::string_view what, std::string_view text, long long min, long long max,
                   long long* out, std::string* err) {
  if (ParseInt(text, min, max, out)) return true;
  if (err) *err = fmt::format("{}: '{}' is not an integer in [{}, {}]", what, text, min, max);
  return false;
}

bool ParseSeconds(std::string_view what, std::string_view text, long long* millis, std::string* err) {
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(value) ||
      value < 0 || value > 1e9) {
    if (err) *err = fmt::format("{}: '{}' is not a non-negative number of seconds", what, text);
    return false;
  }
  *millis = static_cast<long long>(std::llround(value * 1000.0));
  return true;
}

std::vector<std::string> Split(std::string_view text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t pos = text.find(sep, start);
    if (pos == std::string_view::npos) {
      parts.emplace_back(text.substr(start));
      return parts;
    }
    parts.emplace_back(text.substr(start, pos - start));
    start = pos + 1;
  }
}

bool ParseKeyValues(std::string_view what, std::string_view text,
                    std::vector<std::pair<std::string, std::string>>* out, std::string* err) {
  out->clear();
  if (text.empty()) return true;
  for (const std::string& item : Split(text, ',')) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      if (err) *err = fmt::format("{}: '{}' is not key=value (in '{}')", what, item, text);
      return false;
    }
    out->emplace_back(item.substr(0, eq), item.substr(eq + 1));
  }
  return true;
}

std::optional<std::string> LastLongOption(std::string_view line, std::string_view name) {
  std::istringstream words{std::string(line)};
  std::string word;
  std::optional<std::string> found;
  std::string prefix = "--" + std::string(name);
  while (words >> word) {
    if (word == prefix) {
      found = "";
    } else if (word.rfind(prefix + "=", 0) == 0) {
      found = word.substr(prefix.size() + 1);
    }
  }
  return found;
}

bool SubmitLineIsElastic(std::string_view submit_line) {
  std::optional<std::string> value = LastLongOption(submit_line, "elastic");
  if (!value) return false;
  std::string lower = *value;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower != "off" && lower != "no" && lower != "0";
}

}  // namespace elastic
