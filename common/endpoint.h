// A network endpoint as users write it (--rdzv-endpoint, --elastic-rdzv-endpoint,
// PET_RDZV_ENDPOINT), parsed once into a type and printed back by one formatter:
//   HOST         a host name or IPv4 address; the port is the caller's default
//   HOST:PORT    PORT 1..65535
//   [IPV6]       an IPv6 literal in brackets (a zone "%eth0" allowed)
//   [IPV6]:PORT
//   IPV6         a bare IPv6 literal (two or more ':'), no port: "fe80::1" is
//                read as an address, never as "fe80:" port 1
// Host names hold letters, digits and ".-_" (at most 255 characters); empty
// hosts, empty ports ("host:") and text after ']' other than ":PORT" are errors.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace elastic {

struct Endpoint {
  std::string host;         // without brackets; never empty once parsed
  std::optional<int> port;  // unset: the caller's default

  int PortOr(int default_port) const { return port.value_or(default_port); }
  bool operator==(const Endpoint&) const = default;
};

inline constexpr size_t kMaxHostLength = 255;

// Parses `text`, the value of `what` (named in errors with the whole value).
bool ParseEndpoint(std::string_view what, std::string_view text, Endpoint* out, std::string* err);
// The same, and port 0 ("pick a free port": torchrun's --rdzv-endpoint=HOST:0).
bool ParseEndpointOrFreePort(std::string_view what, std::string_view text, Endpoint* out, std::string* err);

// A host as ParseEndpoint reads it (a name, IPv4 or IPv6 literal without
// brackets, at most kMaxHostLength): what a peer may send as an address.
bool IsValidHost(std::string_view host);

// "host", "host:port", "[v6]", "[v6]:port": the text ParseEndpoint reads back.
std::string FormatEndpoint(const Endpoint& endpoint);
// Shorthand for a host and a known port.
std::string FormatEndpoint(const std::string& host, int port);

}  // namespace elastic
