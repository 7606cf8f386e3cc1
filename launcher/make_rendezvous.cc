#include "launcher/make_rendezvous.h"

#include "launcher/local_rendezvous.h"

namespace elastic {

// Until the C10d rendezvous lands: single-node runs only.
std::unique_ptr<RendezvousHandler> MakeRendezvous(const RendezvousOptions& options, EventLoop& loop,
                                                  std::string* err) {
  if (options.standalone || (options.max_nodes == 1 && options.endpoint.empty())) {
    return CreateLocalRendezvous(loop, options);
  }
  if (err) *err = "multi-node rendezvous (--nnodes > 1) is not available in this build";
  return nullptr;
}

}  // namespace elastic
