#include "launcher/option_values.h"

#include <signal.h>

#include <algorithm>
#include <cctype>
#include <fmt/format.h>

#include "common/parse.h"

namespace elastic {
namespace {

int SignalByName(std::string name) {
  if (name.rfind("SIG", 0) == 0) name = name.substr(3);
  static const std::pair<const char*, int> kSignals[] = {
      {"TERM", SIGTERM}, {"INT", SIGINT}, {"HUP", SIGHUP},
      {"QUIT", SIGQUIT}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}};
  for (auto [n, sig] : kSignals) {
    if (name == n) return sig;
  }
  return 0;
}

}  // namespace

bool ParseBool(const std::string& what, const std::string& text, bool* out, std::string* err) {
  std::string t = text;
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (t == "1" || t == "true" || t == "yes" || t == "on") {
    *out = true;
  } else if (t == "0" || t == "false" || t == "no" || t == "off" || t.empty()) {
    *out = false;
  } else {
    *err = fmt::format("{}: '{}' is not a boolean (1/0, true/false)", what, text);
    return false;
  }
  return true;
}

bool ParseStdSpec(const std::string& what, const std::string& text, StdSpec* out,
                  std::string* err) {
  *out = StdSpec{};
  long long v = 0;
  if (ParseInt(text, 0, 3, &v)) {
    out->all = static_cast<int>(v);
    return true;
  }
  for (const std::string& item : Split(text, ',')) {
    auto kv = Split(item, ':');
    long long rank = 0;
    if (kv.size() != 2 || !ParseInt(kv[0], 0, 100000, &rank) || !ParseInt(kv[1], 0, 3, &v)) {
      *err = fmt::format("{}: '{}' is not 0-3 or LOCAL_RANK:0-3,... (0 none, 1 stdout, 2 stderr, 3 both)",
                         what, text);
      return false;
    }
    out->per_rank[static_cast<int>(rank)] = static_cast<int>(v);
  }
  return true;
}

bool ParseRankList(const std::string& what, const std::string& text, std::vector<int>* out,
                   std::string* err) {
  out->clear();
  if (text.empty()) return true;
  for (const std::string& item : Split(text, ',')) {
    long long rank = 0;
    if (!ParseInt(item, 0, 100000, &rank)) {
      *err = fmt::format("{}: '{}' is not a comma-separated list of local ranks", what, text);
      return false;
    }
    out->push_back(static_cast<int>(rank));
  }
  return true;
}

bool ParseSignals(const std::string& what, const std::string& text, std::vector<int>* out,
                  std::string* err) {
  out->clear();
  for (const std::string& item : Split(text, ',')) {
    int sig = SignalByName(item);
    if (sig == 0) {
      *err = fmt::format("{}: '{}' is not one of SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2",
                         what, item);
      return false;
    }
    out->push_back(sig);
  }
  return true;
}

bool OneOf(const std::string& what, const std::string& text,
           std::initializer_list<const char*> choices, std::string* err) {
  std::string list;
  for (const char* c : choices) {
    if (text == c) return true;
    list += list.empty() ? c : std::string(", ") + c;
  }
  *err = fmt::format("{}: '{}' is not one of: {}", what, text, list);
  return false;
}

bool ParseCpuList(const std::string& what, const std::string& text, std::string* err) {
  if (text.empty()) return true;
  for (const std::string& item : Split(text, ',')) {
    auto range = Split(item, '-');
    long long a = 0, b = 0;
    bool ok = range.size() <= 2 && ParseInt(range[0], 0, 1 << 20, &a) &&
              (range.size() == 1 || (ParseInt(range[1], 0, 1 << 20, &b) && a <= b));
    if (!ok) {
      *err = fmt::format("{}: '{}' is not a CPU list like 0-3,8,10-11", what, text);
      return false;
    }
  }
  return true;
}

}  // namespace elastic
