// ELASTIC_RDZV_PEERS, the run's candidate nodes an agent asks where the run's host is
// now (rendezvous/host_discovery.h): parsed once, here at the edge.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace elastic {

// Numeric IPv4/IPv6 addresses separated by commas or spaces (no names: the plugin
// resolves them, and the agent looks nothing up on its loop), at most kMaxPeers of
// them, duplicates dropped. false with *err naming the bad entry.
inline constexpr size_t kMaxPeers = 64;
bool ParsePeerList(std::string_view text, std::vector<std::string>* out, std::string* err);

// The text ParsePeerList reads back (comma-separated).
std::string FormatPeerList(const std::vector<std::string>& peers);

}  // namespace elastic
