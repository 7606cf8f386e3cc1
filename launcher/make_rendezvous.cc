#include "launcher/make_rendezvous.h"

#include <cstdlib>

#include <fmt/format.h>

#include "common/parse.h"
#include "rendezvous/c10d_rendezvous.h"

namespace elastic {
namespace {

// Under Slurm the launcher knows its node's id and how many nodes are coming.
void ApplySlurmDefaults(const RendezvousOptions& o, RendezvousSettings* s) {
  long long value = 0;
  const char* node_id = std::getenv("SLURM_NODEID");
  if (o.node_rank < 0 && node_id && ParseInt(node_id, 0, 1 << 20, &value))
    s->preferred_rank = static_cast<int>(value);
  const char* nnodes = std::getenv("SLURM_NNODES");
  if (nnodes && ParseInt(nnodes, 1, 1 << 20, &value) && value >= o.min_nodes &&
      value <= o.max_nodes)
    s->expected_nodes = static_cast<int>(value);
}

bool BuildSettings(const RendezvousOptions& o, RendezvousSettings* s, std::string* err) {
  s->min_nodes = o.min_nodes;
  s->max_nodes = o.max_nodes;
  s->max_restarts = o.max_restarts;
  s->preferred_rank = o.node_rank;
  ApplySlurmDefaults(o, s);
  if (const char* token = std::getenv("ELASTIC_RDZV_TOKEN")) s->token = token;
  // --rdzv-conf wins over the environment.
  return ApplyRendezvousConf(o.conf, s, err);
}

}  // namespace

std::unique_ptr<RendezvousHandler> MakeRendezvous(const RendezvousOptions& options, EventLoop& loop,
                                                  std::string* err) {
  C10dParams params;
  if (!BuildSettings(options, &params.settings, err)) return nullptr;
  params.run_id = options.run_id;
  params.node_name = options.hostname.empty() ? "localhost" : options.hostname;
  params.endpoint = options.endpoint;
  // One node and no endpoint is a standalone run: the agent still hosts the
  // workers' store (TORCHELASTIC_USE_AGENT_STORE=True, no port race).
  params.standalone = options.standalone || (options.max_nodes == 1 && options.endpoint.empty());
  if (!params.standalone) {
    if (options.backend != "c10d") {
      if (err) *err = fmt::format("--rdzv-backend: '{}' is not supported (use c10d)", options.backend);
      return nullptr;
    }
    if (options.endpoint.empty()) {
      if (err) *err = "--rdzv-endpoint HOST[:PORT] is required for a multi-node run (or --standalone)";
      return nullptr;
    }
  }
  return CreateC10dRendezvous(loop, params, err);
}

}  // namespace elastic
