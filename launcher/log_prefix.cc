#include "launcher/log_prefix.h"

#include <fmt/format.h>

namespace elastic {
namespace {

bool IdentifierChar(char c, bool first) {
  return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9');
}

// The value of a known name, or false.
bool Field(const std::string& name, const LogPrefixFields& f, std::string* out) {
  if (name == "role_name") return *out = f.role_name, true;
  if (name == "rank") return *out = std::to_string(f.rank), true;
  if (name == "local_rank") return *out = std::to_string(f.local_rank), true;
  if (name == "hostname") return *out = f.hostname, true;
  return false;
}

}  // namespace

std::string LogLinePrefix(const std::string& templ, const LogPrefixFields& fields) {
  if (templ.empty()) return fmt::format("[rank{}]: ", fields.rank);
  std::string out;
  size_t i = 0;
  while (i < templ.size()) {
    if (templ[i] != '$' || i + 1 == templ.size()) {
      out += templ[i++];
      continue;
    }
    if (templ[i + 1] == '$') {
      out += '$';
      i += 2;
      continue;
    }
    bool braced = templ[i + 1] == '{';
    size_t start = i + (braced ? 2 : 1), end = start;
    while (end < templ.size() && IdentifierChar(templ[end], end == start)) ++end;
    std::string value;
    bool closed = !braced || (end < templ.size() && templ[end] == '}');
    if (end > start && closed && Field(templ.substr(start, end - start), fields, &value)) {
      out += value;
      i = end + (braced ? 1 : 0);
    } else {
      out += templ[i++];  // safe_substitute: left as written
    }
  }
  return out;
}

}  // namespace elastic
