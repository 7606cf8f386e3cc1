// Bytes from the network, made safe to print: a peer must not be able to forge
// log lines (newlines, terminal escape sequences) or flood the log with one line.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace elastic {

// Printable ASCII (0x20..0x7e) as is, a backslash as "\\", every other byte as
// "\xNN". At most max_bytes of escaped text; longer input ends in "...(N bytes)".
std::string EscapeForLog(std::string_view bytes, size_t max_bytes = 200);

// A name the rendezvous protocol carries (run id, node name): 1 to kMaxNameBytes
// printable ASCII bytes, since every node prints and compares it. The error names
// `what` and shows the value escaped.
inline constexpr size_t kMaxNameBytes = 255;
bool CheckProtocolName(std::string_view what, std::string_view text, std::string* err);

}  // namespace elastic
