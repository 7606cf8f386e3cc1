// torchrun's --duplicate-stdout-filters / --duplicate-stderr-filters (2.14): the
// workers' lines that contain one of the filters are also written to
// LOG_DIR/attempt_N/filtered_stdout.log (filtered_stderr.log), one file per attempt
// for all local ranks, each line with its worker's console prefix.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/unique_fd.h"

namespace elastic {

// torchrun's comma_separated_list: "a,b" is {a, b}, ",," a comma inside a filter;
// "" (not given) is {}: nothing is duplicated. An empty filter ("a,") matches every
// line, as in torchrun.
std::vector<std::string> ParseDuplicateFilters(const std::string& text);

// Whether `line` contains one of `filters` (none: never).
bool MatchesAnyFilter(std::string_view line, const std::vector<std::string>& filters);

// One attempt's filtered_std*.log, shared by the workers' streams of one kind
// (stdout or stderr). Owns the file.
class DuplicateSink {
 public:
  DuplicateSink(std::vector<std::string> filters, UniqueFd file)
      : filters_(std::move(filters)), file_(std::move(file)) {}

  // `lines`: whole lines as LineSplitter emits them ("PREFIX" text "\n", ...), each
  // starting with `prefix_size` bytes of prefix, which the filters do not see.
  // Appends the matching ones, prefix included, in one write.
  void Write(std::string_view lines, size_t prefix_size);

 private:
  std::vector<std::string> filters_;
  UniqueFd file_;
};

}  // namespace elastic
