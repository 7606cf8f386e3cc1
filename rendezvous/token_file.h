// The rendezvous token read from a file, so that it never has to be on a
// command line (readable by every local user in /proc/PID/cmdline).
#pragma once

#include <cstddef>
#include <string>

namespace elastic {

// The token kept in a file (--rdzv-conf token_file=PATH, ELASTIC_RDZV_TOKEN_FILE):
// a command line is readable by every local user (/proc/PID/cmdline), a file
// need not be. Refuses a file that is not regular, not owned by this user, or
// readable by its group or others ("chmod 600 PATH"), over 4 KiB, or empty; one
// trailing newline (and whitespace) is not part of the token.
inline constexpr size_t kMaxTokenFileBytes = 4096;
bool ReadTokenFile(const std::string& path, std::string* token, std::string* err);

}  // namespace elastic
