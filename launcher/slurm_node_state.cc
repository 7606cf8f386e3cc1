#include "launcher/slurm_node_state.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "common/log_escape.h"

namespace elastic {
namespace {

// Where `key` (with its '=') starts a field: at the start or after a space.
std::optional<size_t> FieldValue(std::string_view line, std::string_view key) {
  for (size_t pos = line.find(key); pos != std::string_view::npos; pos = line.find(key, pos + 1))
    if (pos == 0 || line[pos - 1] == ' ') return pos + key.size();
  return std::nullopt;
}

std::string_view Token(std::string_view line, size_t start) {
  size_t end = line.find(' ', start);
  return line.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
}

// Reason runs to its " [user@time]" or to the next optional field (node_info.c prints
// Comment, Extra, InstanceId, InstanceType, ReservationName after it).
std::string_view ReasonValue(std::string_view line, size_t start) {
  std::string_view rest = line.substr(start);
  size_t end = rest.size();
  for (std::string_view stop : {" [", " Comment=", " Extra=", " InstanceId=", " InstanceType=",
                                " ReservationName="})
    end = std::min(end, rest.find(stop));
  rest = rest.substr(0, end);
  while (!rest.empty() && rest.back() == ' ') rest.remove_suffix(1);
  return rest;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

bool ParseScontrolNode(std::string_view text, SlurmNodeState* out, std::string* err) {
  std::string_view line = text.substr(0, text.find('\n'));
  auto fail = [&](std::string why) {
    *err = fmt::format("{} in scontrol's answer '{}'", why, EscapeForLog(line, 120));
    return false;
  };
  if (line.rfind("NodeName=", 0) != 0) return fail("no NodeName= at its start");
  SlurmNodeState node;
  node.name = std::string(Token(line, 9));
  if (node.name.empty()) return fail("an empty NodeName");
  auto state = FieldValue(line, "State=");
  if (!state) return fail("no State=");
  node.state = std::string(Token(line, *state));
  if (node.state.empty()) return fail("an empty State");
  if (auto reason = FieldValue(line, "Reason=")) node.reason = std::string(ReasonValue(line, *reason));
  if (auto addr = FieldValue(line, "NodeAddr=")) node.addr = std::string(Token(line, *addr));
  *out = std::move(node);
  return true;
}

std::string NodeVerdict(const std::string& state) {
  bool down = false, fail = false, drain = false;
  std::string_view rest = state;
  while (!rest.empty()) {
    size_t plus = rest.find('+');
    std::string_view part = rest.substr(0, plus);
    rest = plus == std::string_view::npos ? std::string_view() : rest.substr(plus + 1);
    // The short form's suffixes: * not responding, ~ powered off, # powering up, ...
    while (!part.empty() && std::string_view("*~#!%$@^-").find(part.back()) != std::string_view::npos)
      part.remove_suffix(1);
    std::string word = Upper(part);
    down = down || word == "DOWN";
    fail = fail || word == "FAIL" || word == "FAILING";
    drain = drain || word == "DRAIN" || word == "DRAINING" || word == "DRAINED";
  }
  return down ? "DOWN" : fail ? "FAIL" : drain ? "DRAIN" : "";
}

std::string StandByReason(const SlurmNodeState& node) {
  std::string verdict = NodeVerdict(node.state);
  if (verdict.empty()) return "";
  std::string reason = node.reason.empty() ? std::string("no reason given")
                                           : "reason: " + EscapeForLog(node.reason, 200);
  return fmt::format("{} is {} in Slurm ({})", EscapeForLog(node.name, 100), verdict, reason);
}

bool ShouldAskSlurm(bool unknown, std::optional<MonoClock::time_point> last_asked,
                    MonoClock::time_point now, std::chrono::milliseconds min_interval) {
  if (unknown) return false;
  return !last_asked || now - *last_asked >= min_interval;
}

}  // namespace elastic
