// Parsing of outside input (options, environment values) with errors that
// name the bad value. Convention: bool + std::string* err.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace elastic {

// Whole-string decimal integer within [min, max]; no sign tricks, no spaces.
bool ParseInt(std::string_view text, long long min, long long max, long long* out);

// Same, with an error message naming `what`:  "--max-restarts: 'x' is not an integer in [0, 1000]".
bool ParseIntNamed(std::string_view what, std::string_view text, long long min, long long max,
                   long long* out, std::string* err);

// Non-negative duration in seconds, decimal allowed ("0.1", "30"). Returns milliseconds.
bool ParseSeconds(std::string_view what, std::string_view text, long long* millis, std::string* err);

// Splits on `sep`, keeping empty fields.
std::vector<std::string> Split(std::string_view text, char sep);

// "k=v,k2=v2" into pairs; an entry without '=' or with an empty key is an error.
bool ParseKeyValues(std::string_view what, std::string_view text,
                    std::vector<std::pair<std::string, std::string>>* out, std::string* err);

// The value of the last "--NAME=VALUE" word of a command line (srun's submit line, as Slurm
// keeps it); "" for a bare "--NAME"; nullopt when absent.
std::optional<std::string> LastLongOption(std::string_view line, std::string_view name);

// Whether an srun command line asks for an elastic step: a last --elastic[=X] other than
// off/no/0 (any case, as the plugin reads the option); --elastic-join alone does not.
bool SubmitLineIsElastic(std::string_view submit_line);

}  // namespace elastic
