// Enum <-> wire name through one table of {value, name} pairs: the name of a
// value (or a fallback) and the value of a name. For the small closed sets of
// names the project's formats use (end reasons, event kinds).
#pragma once

#include <string_view>
#include <utility>

namespace elastic {

template <typename E, std::size_t N>
const char* NameIn(const std::pair<E, const char*> (&table)[N], E value, const char* fallback) {
  for (const auto& [v, name] : table)
    if (v == value) return name;
  return fallback;
}

template <typename E, std::size_t N>
bool ValueIn(const std::pair<E, const char*> (&table)[N], std::string_view name, E* out) {
  for (const auto& [v, n] : table) {
    if (name == n) {
      *out = v;
      return true;
    }
  }
  return false;
}

}  // namespace elastic
