// The console prefix of a worker's output lines: "[rankN]: " by default, or
// torchrun's --log-line-prefix-template (TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE)
// expanded as Python's string.Template.safe_substitute expands it there:
// $name or ${name} for role_name, rank (global), local_rank and hostname; "$$"
// is "$"; anything else (an unknown name, a lone "$") stays as written. The
// expansion is the whole prefix, as in torchrun (no separator is added).
#pragma once

#include <string>

namespace elastic {

struct LogPrefixFields {
  std::string role_name;
  int rank = 0;
  int local_rank = 0;
  std::string hostname;
};

// `templ` "" is the default prefix.
std::string LogLinePrefix(const std::string& templ, const LogPrefixFields& fields);

}  // namespace elastic
