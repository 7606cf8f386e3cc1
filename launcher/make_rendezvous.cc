#include "launcher/make_rendezvous.h"

#include <fmt/format.h>

#include "rendezvous/token_file.h"
#include "common/log.h"
#include "rendezvous/c10d_rendezvous.h"

namespace elastic {
bool BuildRendezvousSettings(const RendezvousOptions& o, RendezvousSettings* s, std::string* err) {
  s->min_nodes = o.min_nodes;
  s->max_nodes = o.max_nodes;
  s->max_restarts = o.max_restarts;
  s->node_multiple = o.node_multiple;
  s->preferred_rank = o.node_rank;
  if (o.expected_nodes) s->expected_nodes = *o.expected_nodes;
  if (!o.token.empty() && !o.token_file.empty()) {
    if (err) *err = "both ELASTIC_RDZV_TOKEN and ELASTIC_RDZV_TOKEN_FILE are set: keep one";
    return false;
  }
  if (!o.token.empty()) s->token = o.token;
  if (!o.token_file.empty() && !ReadTokenFile(o.token_file, &s->token, err)) {
    if (err) *err = "ELASTIC_RDZV_TOKEN_FILE: " + *err;
    return false;
  }
  // --rdzv-conf wins over the environment.
  std::string warning;
  if (!ApplyRendezvousConf(o.conf, s, err, &warning)) return false;
  if (!warning.empty()) Log(LogLevel::kWarning, "{}", warning);
  return true;
}

std::unique_ptr<RendezvousHandler> MakeRendezvous(const RendezvousOptions& options, EventLoop& loop,
                                                  std::string* err, HostObserver* observer) {
  C10dParams params;
  params.observer = observer;
  if (!BuildRendezvousSettings(options, &params.settings, err)) return nullptr;
  params.run_id = options.run_id;
  params.node_name = options.hostname.empty() ? "localhost" : options.hostname;
  if (options.endpoint) params.endpoint = *options.endpoint;
  params.peers = options.peers;
  // One node and no endpoint is a standalone run: the agent still hosts the
  // workers' store (TORCHELASTIC_USE_AGENT_STORE=True, no port race). Port 0
  // (torchrun's "pick a free port") is the same: nobody else could find the port.
  bool free_port = options.endpoint && options.endpoint->port == 0;
  params.standalone = options.standalone || (options.max_nodes == 1 && (!options.endpoint || free_port));
  if (!params.standalone) {
    if (free_port) {
      if (err)
        *err = fmt::format("--rdzv-endpoint: '{}': port 0 (a free port) works for one node only "
                           "(--nnodes=1): the other nodes could not know the port; give a port",
                           FormatEndpoint(*options.endpoint));
      return nullptr;
    }
    if (!options.endpoint) {
      if (err)
        *err = "--rdzv-endpoint HOST[:PORT] (or --master-addr HOST --master-port PORT) is required for "
               "a multi-node run (or --standalone)";
      return nullptr;
    }
  }
  return CreateC10dRendezvous(loop, params, err);
}

}  // namespace elastic
