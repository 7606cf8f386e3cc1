// ELASTIC_RDZV_PEERS (common/peer_list.h). Invariants: it never crashes; an accepted
// list holds at most kMaxPeers distinct entries, none empty, and printed back parses
// to the same list; an error names the variable.
#include <cstdlib>
#include <string>
#include <vector>

#include "common/peer_list.h"

using namespace elastic;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> peers, again;
  std::string err;
  if (!ParsePeerList(text, &peers, &err)) {
    if (err.rfind("ELASTIC_RDZV_PEERS: ", 0) != 0) std::abort();
    return 0;
  }
  if (peers.size() > kMaxPeers) std::abort();
  for (const std::string& p : peers)
    if (p.empty()) std::abort();
  if (!ParsePeerList(FormatPeerList(peers), &again, &err) || again != peers) std::abort();
  return 0;
}
