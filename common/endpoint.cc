#include "common/endpoint.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/parse.h"

namespace elastic {
namespace {

bool HostChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_';
}

bool Ipv6Char(char c) {
  return (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || (c >= '0' && c <= '9') || c == ':' ||
         c == '.';
}

// An IPv6 literal: hex digits, ':' and '.' (an embedded IPv4), at least two
// ':', then an optional zone ("%eth0") of host characters. The resolver
// decides whether it is a real address.
bool LooksLikeIpv6(std::string_view host) {
  size_t zone = host.find('%');
  std::string_view addr = host.substr(0, zone);
  if (addr.empty() || std::count(addr.begin(), addr.end(), ':') < 2) return false;
  for (char c : addr) {
    if (!Ipv6Char(c)) return false;
  }
  if (zone == std::string_view::npos) return true;
  std::string_view name = host.substr(zone + 1);
  if (name.empty()) return false;
  for (char c : name) {
    if (!HostChar(c)) return false;
  }
  return true;
}

bool IsHostName(std::string_view host) {
  if (host.empty()) return false;
  for (char c : host) {
    if (!HostChar(c)) return false;
  }
  return true;
}

}  // namespace

bool IsValidHost(std::string_view host) {
  return !host.empty() && host.size() <= kMaxHostLength && (IsHostName(host) || LooksLikeIpv6(host));
}

namespace {

bool ParseEndpointFrom(int min_port, std::string_view what, std::string_view text, Endpoint* out,
                       std::string* err) {
  auto fail = [&](std::string_view why) {
    if (err) *err = fmt::format("{}: '{}' is not HOST[:PORT] or [IPV6][:PORT] ({})", what, text, why);
    return false;
  };
  if (text.empty()) return fail("empty");
  std::string_view host = text, port;
  bool has_port = false;
  if (text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos) return fail("unclosed '['");
    host = text.substr(1, close - 1);
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return fail("text after ']'");
    if (!rest.empty()) port = rest.substr(1), has_port = true;
    if (!LooksLikeIpv6(host)) return fail("not an IPv6 address in brackets");
  } else if (size_t colon = text.rfind(':'); colon != std::string_view::npos) {
    if (text.find(':') != colon) {
      if (!LooksLikeIpv6(text)) return fail("write IPv6 addresses as [ADDR]:PORT");
    } else {
      host = text.substr(0, colon);
      port = text.substr(colon + 1);
      has_port = true;
      if (host.empty()) return fail("no host");
      if (!IsHostName(host)) return fail("a host name has letters, digits and .-_ only");
    }
  } else if (!IsHostName(host)) {
    return fail("a host name has letters, digits and .-_ only");
  }
  if (host.size() > kMaxHostLength) return fail(fmt::format("host longer than {}", kMaxHostLength));
  long long value = 0;
  if (has_port && port.empty()) return fail("empty port");
  if (has_port && !ParseInt(port, min_port, 65535, &value)) {
    return fail(fmt::format("port '{}' is not in {}..65535", port, min_port));
  }
  out->host = std::string(host);
  out->port.reset();
  if (has_port) out->port = static_cast<int>(value);
  return true;
}

}  // namespace

bool ParseEndpoint(std::string_view what, std::string_view text, Endpoint* out, std::string* err) {
  return ParseEndpointFrom(1, what, text, out, err);
}

bool ParseEndpointOrFreePort(std::string_view what, std::string_view text, Endpoint* out, std::string* err) {
  return ParseEndpointFrom(0, what, text, out, err);
}

std::string FormatEndpoint(const Endpoint& endpoint) {
  bool v6 = endpoint.host.find(':') != std::string::npos;
  std::string host = v6 ? "[" + endpoint.host + "]" : endpoint.host;
  return endpoint.port ? fmt::format("{}:{}", host, *endpoint.port) : host;
}

std::string FormatEndpoint(const std::string& host, int port) { return FormatEndpoint(Endpoint{host, port}); }

}  // namespace elastic
