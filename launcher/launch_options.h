// Reading elasticrun's argv and the environment against the one option table
// (common/option_table.h, shared with the SPANK plugin) and what that
// gives: each option's final text and where it came from.
// launch_convert.cc turns that into a LaunchConfig; launch_config.h is the public
// header (ParseLaunchConfig), this one is shared by the two halves only.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "common/option_table.h"
#include "launcher/launch_config.h"

namespace elastic {

// One option's final text and where it came from, for error messages.
struct OptionValue {
  std::string text;
  std::string name;    // its long name: "--nnodes"
  std::string source;  // "--nnodes" or "PET_NNODES" or "" for the default
  bool given = false;
  // What an error names: where the value came from (the option for a default).
  const std::string& What() const { return source.empty() ? name : source; }
};
using OptionValues = std::array<OptionValue, static_cast<size_t>(Opt::kCount)>;

// The command line read against the table, before any value is converted.
struct RawOptions {
  OptionValues values;               // by Opt: command line > PET_ > torchrun's variable > default
  std::vector<std::string> program;  // the program and its arguments ({}: none given)
  bool spank_wrapped = false;        // ELASTIC_SPANK_ARGV0 was set: options from PET_* only
  std::string print_binding;         // --print-binding: "", "table" or "json"
};

// Reads argv + env against the option table. kExitOk: --help, --version or
// --print-completion printed to *out. kUsageError: *err says what (exit 2).
ParseOutcome ReadOptions(int argc, const char* const* argv, const EnvMap& env, RawOptions* raw,
                         std::string* out, std::string* err);

}  // namespace elastic
