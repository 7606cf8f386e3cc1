#include "spank_plugin/options.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "common/parse.h"

namespace elastic::spank {
namespace {

constexpr int kMaxNodes = 1000000;

// A comma-separated list of dotted Python module names (elasticrun --preload
// checks the same on each node; checking here refuses a typo before allocation).
bool CheckModuleList(const std::string& what, std::string_view text, std::string* err) {
  bool ok = !text.empty() && text.front() != ',' && text.back() != ',' && text.find(",,") == std::string_view::npos;
  for (char c : text) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == ',');
  if (!ok) *err = fmt::format("{}: '{}' is not a list of Python modules (e.g. torch,numpy)", what, text);
  return ok;
}

const char* OptionName(OptionId id) {
  for (const OptionSpec& spec : kOptionTable) {
    if (spec.id == id) return spec.name;
  }
  return "?";
}

bool ParseNodeRange(std::string_view text, std::pair<int, int>* range, std::string* err) {
  auto fail = [&] {
    *err = fmt::format(
        "--elastic: '{}' is not MIN:MAX or N (node counts 1..{}, MIN <= MAX) or 'off'", text,
        kMaxNodes);
    return false;
  };
  long long lo = 0, hi = 0;
  size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    if (!ParseInt(text, 1, kMaxNodes, &lo)) return fail();
    hi = lo;
  } else if (!ParseInt(text.substr(0, colon), 1, kMaxNodes, &lo) ||
             !ParseInt(text.substr(colon + 1), 1, kMaxNodes, &hi) || lo > hi) {
    return fail();
  }
  *range = {static_cast<int>(lo), static_cast<int>(hi)};
  return true;
}

bool ParsePort(std::string_view what, std::string_view text, int* port, std::string* err) {
  long long value = 0;
  if (!ParseIntNamed(what, text, 1, 65535, &value, err)) return false;
  *port = static_cast<int>(value);
  return true;
}

// HOST[:PORT]; IPv6 literals as [addr]:port.
bool ParseEndpoint(std::string_view text, ElasticOptions* options, std::string* err) {
  auto fail = [&](std::string_view why) {
    *err = fmt::format("--elastic-rdzv-endpoint: '{}' is not HOST[:PORT] ({})", text, why);
    return false;
  };
  std::string_view host = text, port;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos) return fail("unclosed '['");
    host = text.substr(1, close - 1);
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return fail("text after ']'");
      port = rest.substr(1);
      if (port.empty()) return fail("empty port");
    }
  } else if (size_t colon = text.rfind(':'); colon != std::string_view::npos) {
    if (text.find(':') != colon) return fail("write IPv6 addresses as [ADDR]:PORT");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (port.empty()) return fail("empty port");
  }
  if (host.empty()) return fail("empty host");
  if (host.find_first_of(" \t,=") != std::string_view::npos) return fail("bad character in host");
  int port_value = 0;
  if (!port.empty()) {
    std::string perr;
    if (!ParsePort("--elastic-rdzv-endpoint", port, &port_value, &perr)) {
      return fail("port must be 1..65535");
    }
  }
  options->endpoint_host = std::string(host);
  options->endpoint_port.reset();
  if (!port.empty()) options->endpoint_port = port_value;
  return true;
}

bool ParseNproc(std::string_view text, std::string* err) {
  long long n = 0;
  if (text == "gpu" || text == "cpu" || text == "auto" || ParseInt(text, 1, 4096, &n)) return true;
  *err = fmt::format("--elastic-nproc-per-node: '{}' is not N (1..4096), gpu, cpu or auto", text);
  return false;
}

bool NonEmptyValue(OptionId id, const char* value, std::string* err) {
  if (value != nullptr && value[0] != '\0') return true;
  *err = fmt::format("--{}: needs a value", OptionName(id));
  return false;
}

}  // namespace

bool ParseBindMode(const std::string& text, std::string* err) {
  static constexpr std::array<std::string_view, 5> kModes = {"auto", "gpu", "gpu-exclusive", "numa",
                                                             "none"};
  if (std::find(kModes.begin(), kModes.end(), text) != kModes.end()) return true;
  *err = fmt::format("'{}' is not a binding mode (auto, gpu, gpu-exclusive, numa, none)", text);
  return false;
}

bool ApplyOption(OptionId id, const char* value, ElasticOptions* options, std::string* err) {
  std::string error;
  bool ok = false;
  switch (id) {
    case OptionId::kElastic: {
      if (value == nullptr || value[0] == '\0') {
        options->mode = ElasticMode::kOn;
        options->nnodes.reset();
        return true;
      }
      std::string_view text = value;
      if (text == "off" || text == "no" || text == "0") {
        options->mode = ElasticMode::kOff;
        options->nnodes.reset();
        return true;
      }
      std::pair<int, int> range;
      ok = ParseNodeRange(text, &range, &error);
      if (ok) {
        options->mode = ElasticMode::kOn;
        options->nnodes = range;
      }
      break;
    }
    case OptionId::kNprocPerNode:
      ok = NonEmptyValue(id, value, &error) && ParseNproc(value, &error);
      if (ok) options->nproc_per_node = value;
      break;
    case OptionId::kMaxRestarts: {
      long long n = 0;
      ok = NonEmptyValue(id, value, &error) &&
           ParseIntNamed("--elastic-max-restarts", value, 0, 1000000, &n, &error);
      if (ok) options->max_restarts = static_cast<int>(n);
      break;
    }
    case OptionId::kRdzvPort: {
      int port = 0;
      ok = NonEmptyValue(id, value, &error) &&
           ParsePort("--elastic-rdzv-port", value, &port, &error);
      if (ok) options->rdzv_port = port;
      break;
    }
    case OptionId::kRdzvId: {
      ok = NonEmptyValue(id, value, &error);
      std::string_view text = ok ? value : "";
      if (ok && (text.size() > 128 || text.find_first_of(" \t\n,=") != std::string_view::npos)) {
        error = fmt::format(
            "--elastic-rdzv-id: '{}' is not an id (up to 128 characters, no spaces, ',' or '=')",
            text);
        ok = false;
      }
      if (ok) options->rdzv_id = std::string(text);
      break;
    }
    case OptionId::kRdzvEndpoint:
      ok = NonEmptyValue(id, value, &error) && ParseEndpoint(value, options, &error);
      break;
    case OptionId::kRdzvConf: {
      std::vector<std::pair<std::string, std::string>> pairs;
      ok = NonEmptyValue(id, value, &error) &&
           ParseKeyValues("--elastic-rdzv-conf", value, &pairs, &error);
      if (ok) options->rdzv_conf = std::move(pairs);
      break;
    }
    case OptionId::kBind:
      ok = NonEmptyValue(id, value, &error) && ParseBindMode(value, &error);
      if (!ok && value != nullptr && value[0] != '\0') error = "--elastic-bind: " + error;
      if (ok) options->bind = value;
      break;
    case OptionId::kLogDir:
      ok = NonEmptyValue(id, value, &error);
      if (ok) options->log_dir = value;
      break;
    case OptionId::kNoPython:
      ok = true;
      options->no_python = true;
      break;
    case OptionId::kPython:
      ok = NonEmptyValue(id, value, &error);
      if (ok) options->python = value;
      break;
    case OptionId::kPreload:
      ok = NonEmptyValue(id, value, &error) && CheckModuleList("--elastic-preload", value, &error);
      if (ok) options->preload = value;
      break;
    case OptionId::kHealthCheck:
      ok = NonEmptyValue(id, value, &error);
      if (ok) options->health_check = value;
      break;
  }
  if (!ok) {
    if (err) *err = error;
    return false;
  }
  if (id != OptionId::kElastic) {
    std::string name = std::string("--") + OptionName(id);
    if (std::find(options->given.begin(), options->given.end(), name) == options->given.end()) {
      options->given.push_back(name);
    }
  }
  return true;
}

bool ParsePluginArgs(const std::vector<std::string>& args, const std::string& default_launcher,
                     PluginConfig* config, std::string* err) {
  PluginConfig result;
  result.launcher = default_launcher;
  for (const std::string& arg : args) {
    size_t eq = arg.find('=');
    if (eq == std::string::npos || eq == 0) {
      *err = fmt::format("plugstack.conf: argument '{}' is not key=value (keys: launcher, "
                         "max_restarts, port, bind, python, preload, health_check, default)", arg);
      return false;
    }
    std::string key = arg.substr(0, eq), value = arg.substr(eq + 1);
    std::string what = "plugstack.conf: " + key;
    if (key == "launcher") {
      if (value.empty() || value.front() != '/') {
        *err = fmt::format("{}: '{}' is not an absolute path", what, value);
        return false;
      }
      result.launcher = value;
    } else if (key == "max_restarts") {
      long long n = 0;
      if (!ParseIntNamed(what, value, 0, 1000000, &n, err)) return false;
      result.max_restarts = static_cast<int>(n);
    } else if (key == "port") {
      size_t dash = value.find('-');
      long long lo = 0, hi = 0;
      if (dash == std::string::npos) {
        if (!ParseIntNamed(what, value, 1, 65535, &lo, err)) return false;
        result.fixed_port = static_cast<int>(lo);
      } else if (!ParseInt(value.substr(0, dash), 1, 65535, &lo) ||
                 !ParseInt(value.substr(dash + 1), 1, 65535, &hi) || lo > hi) {
        *err = fmt::format("{}: '{}' is not PORT or LO-HI (1..65535, LO <= HI)", what, value);
        return false;
      } else {
        result.port_lo = static_cast<int>(lo);
        result.port_hi = static_cast<int>(hi);
      }
    } else if (key == "bind") {
      std::string berr;
      if (!ParseBindMode(value, &berr)) {
        *err = what + ": " + berr;
        return false;
      }
      result.bind = value;
    } else if (key == "python") {
      if (value.empty()) {
        *err = what + ": needs a value";
        return false;
      }
      result.python = value;
    } else if (key == "preload") {
      if (!CheckModuleList(what, value, err)) return false;
      result.preload = value;
    } else if (key == "health_check") {
      if (value.empty()) {
        *err = what + ": needs a value";
        return false;
      }
      result.health_check = value;
    } else if (key == "default") {
      if (value != "on" && value != "off") {
        *err = fmt::format("{}: '{}' is not on or off", what, value);
        return false;
      }
      result.default_on = value == "on";
    } else {
      *err = fmt::format("plugstack.conf: unknown argument '{}' (keys: launcher, max_restarts, "
                         "port, bind, python, preload, health_check, default)", key);
      return false;
    }
  }
  *config = std::move(result);
  return true;
}

bool ElasticActive(const ElasticOptions& options, const PluginConfig& config) {
  if (options.mode == ElasticMode::kUnset) return config.default_on;
  return options.mode == ElasticMode::kOn;
}

bool ValidateCombination(const ElasticOptions& options, const PluginConfig& config,
                         std::string* err) {
  if (!ElasticActive(options, config) && !options.given.empty()) {
    *err = fmt::format("{} needs --elastic (add --elastic or --elastic=MIN:MAX)", options.given[0]);
    return false;
  }
  if (options.rdzv_port && options.endpoint_port && *options.rdzv_port != *options.endpoint_port) {
    *err = fmt::format("--elastic-rdzv-port={} and the port of --elastic-rdzv-endpoint ({}) differ",
                       *options.rdzv_port, *options.endpoint_port);
    return false;
  }
  return true;
}

}  // namespace elastic::spank
