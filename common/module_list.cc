#include "common/module_list.h"

#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace elastic {
namespace {

bool IsIdentifierChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// A dotted name: identifiers (not starting with a digit) joined by single dots.
bool IsModuleName(std::string_view name) {
  bool at_start = true;
  for (char c : name) {
    if (c == '.') {
      if (at_start) return false;
      at_start = true;
      continue;
    }
    if (!IsIdentifierChar(c) || (at_start && std::isdigit(static_cast<unsigned char>(c)))) return false;
    at_start = false;
  }
  return !at_start;
}

}  // namespace

bool ParseModuleList(std::string_view what, std::string_view text, std::vector<std::string>* out,
                     std::string* err) {
  out->clear();
  if (text.empty()) return true;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string_view name = text.substr(start, comma == std::string_view::npos ? comma : comma - start);
    if (!IsModuleName(name)) {
      out->clear();
      *err = fmt::format("{}: '{}' is not a list of Python modules: '{}' is not a module name "
                         "(comma-separated dotted names, e.g. torch,numpy)",
                         what, text, name);
      return false;
    }
    out->emplace_back(name);
    if (comma == std::string_view::npos) return true;
    start = comma + 1;
  }
}

std::string FormatModuleList(const std::vector<std::string>& modules) {
  return fmt::format("{}", fmt::join(modules, ","));
}

}  // namespace elastic
