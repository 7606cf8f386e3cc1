// Typed reads of a JSON object's fields for the launcher's own formats (the event
// record, job_events.h; the status view, job_status.h): never throws.
#pragma once

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

namespace elastic {

// Field readers: a present field of the wrong type is an error; a missing one
// keeps the default unless required.
template <typename T>
inline bool GetField(const nlohmann::json& j, const char* key, T* out, bool required, std::string* err) {
  auto it = j.find(key);
  if (it == j.end()) {
    if (required) *err = fmt::format("missing field '{}'", key);
    return !required;
  }
  bool ok;
  if constexpr (std::is_same_v<T, std::string>) ok = it->is_string();
  else if constexpr (std::is_same_v<T, bool>) ok = it->is_boolean();
  else if constexpr (std::is_unsigned_v<T>) ok = it->is_number_unsigned();
  else ok = it->is_number_integer();
  if (!ok) {
    *err = fmt::format("field '{}' has the wrong type", key);
    return false;
  }
  if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, bool>) {
    *out = it->get<T>();
  } else {
    // Out of T's range: an error, not a silent wrap.
    if (it->is_number_unsigned() ? it->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<T>::max())
                                 : (it->get<int64_t>() < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
                                    (std::is_signed_v<T> &&
                                     it->get<int64_t>() > static_cast<int64_t>(std::numeric_limits<T>::max())))) {
      *err = fmt::format("field '{}' is out of range", key);
      return false;
    }
    *out = it->get<T>();
  }
  return true;
}

}  // namespace elastic
