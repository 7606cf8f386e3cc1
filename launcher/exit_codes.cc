#include "launcher/exit_codes.h"

namespace elastic {

int ExitCodeForFatal(const std::string& message) {
  // The rendezvous reports why it ended as text (rendezvous_state.cc BelowMinCheck and
  // its majority rule, rendezvous_client.cc, failover_rendezvous.cc): these are the
  // phrases of a job that lost nodes.
  for (const char* phrase : {"below the minimum of", "lost the rendezvous host", "no strict majority",
                             "no successor of round", "the rendezvous host is lost"}) {
    if (message.find(phrase) != std::string::npos) return kExitNodesLost;
  }
  return kExitJobFailed;
}

}  // namespace elastic
