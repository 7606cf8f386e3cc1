#include "common/grow_options.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>

namespace elastic {

namespace {

constexpr std::string_view kAllowed = "partition=P, qos=Q, account=A, time=T, nice=N, interval=SECONDS";

// Slurm's names (partitions, QOS, accounts): letters, digits, '_', '-', '.'.
bool IsSlurmName(std::string_view v) {
  if (v.empty() || v.size() > 64) return false;
  for (char c : v)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  return true;
}

// Slurm's time forms: digits with ':' and one '-' (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM[:SS]),
// or UNLIMITED; sbatch itself says which form is wrong.
bool IsSlurmTime(std::string_view v) {
  if (v == "UNLIMITED" || v == "unlimited" || v == "infinite") return true;
  if (v.empty() || v.size() > 16 || !std::isdigit(static_cast<unsigned char>(v.front())) ||
      !std::isdigit(static_cast<unsigned char>(v.back())))
    return false;
  int dashes = 0;
  for (char c : v) {
    if (c == '-') ++dashes;
    else if (c != ':' && !std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return dashes <= 1;
}

bool ParseInt(std::string_view v, int lo, int hi, int* out) {
  int n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || n < lo || n > hi) return false;
  *out = n;
  return true;
}

}  // namespace

bool ParseGrowOptions(std::string_view what, std::string_view text, GrowOptions* out, std::string* err) {
  GrowOptions o;
  if (text.empty() || text == "on" || text == "(null)") {
    *out = o;
    return true;
  }
  std::vector<std::string> seen;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string_view word = text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    pos = comma == std::string_view::npos ? text.size() + 1 : comma + 1;
    size_t eq = word.find('=');
    if (eq == std::string_view::npos) {
      *err = fmt::format("{}={}: '{}' is not KEY=VALUE (allowed: {})", what, text, word, kAllowed);
      return false;
    }
    std::string key(word.substr(0, eq));
    std::string_view value = word.substr(eq + 1);
    for (const auto& s : seen) {
      if (s == key) {
        *err = fmt::format("{}={}: {} is given twice", what, text, key);
        return false;
      }
    }
    seen.push_back(key);
    bool ok = true;
    const char* expect = "";
    if (key == "partition" || key == "qos" || key == "account") {
      ok = IsSlurmName(value);
      expect = "a Slurm name (letters, digits, '_', '-', '.')";
      if (ok) (key == "partition" ? o.partition : key == "qos" ? o.qos : o.account) = std::string(value);
    } else if (key == "time") {
      ok = IsSlurmTime(value);
      expect = "a Slurm time limit (MINUTES, HH:MM:SS, D-HH:MM, UNLIMITED)";
      if (ok) o.time = std::string(value);
    } else if (key == "nice") {
      int n = 0;
      ok = ParseInt(value, 0, 2147483645, &n);
      expect = "an integer 0..2147483645 (a user may only lower the helper jobs' priority)";
      if (ok) o.nice = n;
    } else if (key == "interval") {
      ok = ParseInt(value, 1, 3600, &o.interval_s);
      expect = "seconds, 1..3600";
    } else {
      *err = fmt::format("{}={}: unknown key '{}' (allowed: {})", what, text, key, kAllowed);
      return false;
    }
    if (!ok) {
      *err = fmt::format("{}={}: {}='{}' is not {}", what, text, key, value, expect);
      return false;
    }
  }
  *out = o;
  return true;
}

std::string FormatGrowOptions(const GrowOptions& o) {
  std::vector<std::string> words;
  if (!o.partition.empty()) words.push_back("partition=" + o.partition);
  if (!o.qos.empty()) words.push_back("qos=" + o.qos);
  if (!o.account.empty()) words.push_back("account=" + o.account);
  if (!o.time.empty()) words.push_back("time=" + o.time);
  if (o.nice) words.push_back(fmt::format("nice={}", *o.nice));
  if (o.interval_s != kGrowDefaultIntervalS) words.push_back(fmt::format("interval={}", o.interval_s));
  if (words.empty()) return "on";
  std::string text;
  for (const auto& w : words) text += (text.empty() ? "" : ",") + w;
  return text;
}

std::vector<std::string> GrowSbatchArgs(const GrowOptions& o) {
  std::vector<std::string> args;
  if (!o.partition.empty()) args.push_back("--partition=" + o.partition);
  if (!o.qos.empty()) args.push_back("--qos=" + o.qos);
  if (!o.account.empty()) args.push_back("--account=" + o.account);
  if (!o.time.empty()) args.push_back("--time=" + o.time);
  if (o.nice) args.push_back(fmt::format("--nice={}", *o.nice));
  return args;
}

}  // namespace elastic
