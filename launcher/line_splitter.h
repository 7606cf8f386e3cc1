// LineSplitter: turns a byte stream (a worker's pipe) into whole lines, each
// with a prefix ("[rank3]: "). Pure: no I/O, so the splitting rules are unit
// tested. Rules: a line is emitted once its '\n' arrives; Finish() emits a last
// line that has no newline (adding one); a line longer than max_line is cut
// into pieces of max_line bytes, each emitted as its own prefixed line, so a
// worker that never writes '\n' cannot make the agent buffer without bound.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace elastic {

class LineSplitter {
 public:
  static constexpr size_t kDefaultMaxLine = 64 * 1024;

  explicit LineSplitter(std::string prefix, size_t max_line = kDefaultMaxLine)
      : prefix_(std::move(prefix)), max_line_(max_line) {}

  // Appends the prefixed whole lines completed by `data` to *out.
  void Feed(std::string_view data, std::string* out);
  // Appends the pending partial line, if any, with prefix and '\n'.
  void Finish(std::string* out);
  bool has_partial() const { return !partial_.empty(); }

 private:
  void Emit(std::string_view line, std::string* out) const;

  std::string prefix_;
  size_t max_line_;
  std::string partial_;
};

}  // namespace elastic
