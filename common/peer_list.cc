#include "common/peer_list.h"

#include <arpa/inet.h>

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace elastic {
namespace {

bool IsAddressLiteral(const std::string& text) {
  unsigned char buf[16];
  return inet_pton(AF_INET, text.c_str(), buf) == 1 || inet_pton(AF_INET6, text.c_str(), buf) == 1;
}

}  // namespace

bool ParsePeerList(std::string_view text, std::vector<std::string>* out, std::string* err) {
  out->clear();
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = std::min(text.find_first_of(", ", pos), text.size());
    std::string entry(text.substr(pos, end - pos));
    pos = end + 1;
    if (entry.empty()) continue;
    if (!IsAddressLiteral(entry)) {
      if (err) *err = fmt::format("ELASTIC_RDZV_PEERS: '{}' is not a numeric IPv4 or IPv6 address",
                                  entry.substr(0, 64));
      return false;
    }
    if (std::find(out->begin(), out->end(), entry) != out->end()) continue;
    if (out->size() == kMaxPeers) {
      if (err) *err = fmt::format("ELASTIC_RDZV_PEERS: more than {} addresses", kMaxPeers);
      return false;
    }
    out->push_back(std::move(entry));
  }
  return true;
}

std::string FormatPeerList(const std::vector<std::string>& peers) {
  return fmt::format("{}", fmt::join(peers, ","));
}

}  // namespace elastic
