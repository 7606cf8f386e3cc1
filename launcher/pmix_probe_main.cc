// elastic_pmix_probe: runs the PMIx bootstrap once and prints what it found,
// one "key=value" per line. For tests under `srun --mpi=pmix` (tests/spank/).
#include <cstdio>
#include <string>

#include "launcher/pmix_bootstrap.h"

int main() {
  elastic::PmixInfo info;
  std::string err;
  if (!elastic::PmixBootstrap(&info, &err)) {
    std::fprintf(stderr, "elastic_pmix_probe: %s\n", err.c_str());
    return 1;
  }
  std::string all;
  for (const auto& a : info.host_addresses) all += (all.empty() ? "" : ",") + a;
  std::printf("node_rank=%d\nnnodes=%d\nhost_address=%s\nhost_addresses=%s\n", info.node_rank,
              info.nnodes, info.host_address.c_str(), all.c_str());
  return 0;
}
