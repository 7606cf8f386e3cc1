#include "launcher/duplicate_filter.h"

#include <errno.h>
#include <unistd.h>

#include <algorithm>

namespace elastic {

std::vector<std::string> ParseDuplicateFilters(const std::string& text) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  std::string current;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != ',') {
      current += text[i];
    } else if (i + 1 < text.size() && text[i + 1] == ',') {
      current += ',';  // ",,": a comma of the filter
      ++i;
    } else {
      out.push_back(std::move(current));
      current.clear();
    }
  }
  out.push_back(std::move(current));
  return out;
}

bool MatchesAnyFilter(std::string_view line, const std::vector<std::string>& filters) {
  for (const std::string& filter : filters) {
    if (line.find(filter) != std::string_view::npos) return true;
  }
  return false;
}

void DuplicateSink::Write(std::string_view lines, size_t prefix_size) {
  if (!file_) return;
  std::string out;
  while (!lines.empty()) {
    size_t end = lines.find('\n');
    size_t size = end == std::string_view::npos ? lines.size() : end + 1;
    std::string_view line = lines.substr(0, size);
    std::string_view text = line.substr(std::min(prefix_size, line.size()));
    if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
    if (MatchesAnyFilter(text, filters_)) out += line;
    lines.remove_prefix(size);
  }
  // One write(2) per batch to a file opened O_APPEND: the workers' batches never mix.
  const char* data = out.data();
  size_t left = out.size();
  while (left > 0) {
    ssize_t n = write(file_.get(), data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      file_.Reset();  // a full disk: stop copying, the workers go on
      return;
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace elastic
