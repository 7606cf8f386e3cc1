// PMIx bootstrap for elasticrun under `srun --mpi=pmix`:
// node id and node count from PMIx, and the rendezvous host's address from
// node 0 through one Put/Commit/Fence. PMIx_Finalize runs before returning, so
// it is done before any worker starts; never call this after workers run (a
// fence hangs when a node is gone). The result is a value: run.cc merges it into
// the launch settings (MergePmixInfo, launcher/run.h); nothing here touches the
// environment. PmixInfo is plain data, usable where PMIx is not built in.
#pragma once

#include <string>
#include <vector>

namespace elastic {

struct PmixInfo {
  int node_rank = -1;                    // this node's id in the step (PMIX_NODEID)
  int nnodes = 0;                        // nodes in the step (PMIX_NUM_NODES)
  std::string host_address;              // node 0's preferred address
  std::vector<std::string> host_addresses;  // all of node 0's addresses, preferred first
};

// True when this process has a PMIx server (PMIX_RANK and PMIX_NAMESPACE set).
bool PmixAvailable();

// Init, Get own node id / node count, node 0 Put(addresses) + Commit, Fence
// (collecting data, 60 s timeout), others Get node 0's addresses, Finalize.
// Every process of the PMIx namespace must call it (a collective).
bool PmixBootstrap(PmixInfo* out, std::string* err);

// With several tasks per node (task_group.h), tasks 1..N-1 run no agent but are
// processes of the namespace all the same: each takes part in the fence (its node
// id put, nothing else), or task 0's PmixBootstrap waits for them until its timeout.
// True at once without a PMIx server.
bool PmixFollowerFence(std::string* err);

// This host's addresses for others to reach it: the address its hostname
// resolves to when that is not loopback, then every up, non-loopback interface
// address (IPv4 first). Used by node 0.
std::vector<std::string> LocalAddresses();

}  // namespace elastic
