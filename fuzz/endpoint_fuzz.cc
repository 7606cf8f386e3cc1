// The one endpoint parser (common/endpoint.h). Invariants: it never crashes;
// an accepted endpoint has a non-empty host of at most kMaxHostLength
// characters and a port in 1..65535 when one is given; printed back with
// FormatEndpoint it parses to the same endpoint; an error names the option and
// quotes the whole value (fuzz/fuzz_parser.h).
#include <cstdlib>
#include <string>

#include "common/endpoint.h"
#include "fuzz/fuzz_parser.h"

using namespace elastic;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto e = fuzz::CheckParser<Endpoint>(text, ParseEndpoint, [](const Endpoint& v) { return FormatEndpoint(v); });
  if (!e) return 0;
  if (e->host.empty() || e->host.size() > kMaxHostLength) std::abort();
  if (e->port && (*e->port < 1 || *e->port > 65535)) std::abort();
  return 0;
}
