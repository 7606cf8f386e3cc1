#include "launcher/pmix_bootstrap.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>
#include <pmix.h>

#include "common/parse.h"

namespace elastic {
namespace {

constexpr const char* kAddrKey = "elastic.rdzv_host_addrs";

bool IsLoopback(const std::string& addr) {
  return addr.starts_with("127.") || addr == "::1";
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ',';
    out += item;
  }
  return out;
}

// Finalizes on every exit path once PMIx_Init succeeded.
class PmixSession {
 public:
  bool Init(pmix_proc_t* me, std::string* err) {
    pmix_status_t rc = PMIx_Init(me, nullptr, 0);
    if (rc != PMIX_SUCCESS) {
      *err = fmt::format("PMIx_Init: {}", PMIx_Error_string(rc));
      return false;
    }
    active_ = true;
    return true;
  }
  ~PmixSession() {
    if (active_) PMIx_Finalize(nullptr, 0);
  }

 private:
  bool active_ = false;
};

bool GetUint32(const pmix_proc_t* proc, const char* key, uint32_t* out, std::string* err) {
  pmix_value_t* value = nullptr;
  pmix_status_t rc = PMIx_Get(proc, key, nullptr, 0, &value);
  if (rc != PMIX_SUCCESS || value == nullptr) {
    *err = fmt::format("PMIx_Get({}): {}", key, PMIx_Error_string(rc));
    return false;
  }
  bool ok = true;
  switch (value->type) {
    case PMIX_UINT32: *out = value->data.uint32; break;
    case PMIX_UINT16: *out = value->data.uint16; break;
    case PMIX_UINT64: *out = static_cast<uint32_t>(value->data.uint64); break;
    case PMIX_INT: *out = static_cast<uint32_t>(value->data.integer); break;
    case PMIX_UINT: *out = value->data.uint; break;
    default:
      *err = fmt::format("PMIx_Get({}): unexpected type {}", key, static_cast<int>(value->type));
      ok = false;
  }
  PMIX_VALUE_RELEASE(value);
  return ok;
}

bool GetString(const pmix_proc_t* proc, const char* key, std::string* out) {
  pmix_value_t* value = nullptr;
  if (PMIx_Get(proc, key, nullptr, 0, &value) != PMIX_SUCCESS || value == nullptr) return false;
  bool ok = value->type == PMIX_STRING && value->data.string != nullptr;
  if (ok) *out = value->data.string;
  PMIX_VALUE_RELEASE(value);
  return ok;
}

// Puts this process's node id (and `addrs`, when given: node 0's agent), commits
// and fences with every process of the namespace, collecting the data (60 s).
bool PublishAndFence(const pmix_proc_t& job, uint32_t node_id, const std::string* addrs, std::string* err) {
  pmix_value_t value;
  PMIX_VALUE_CONSTRUCT(&value);
  std::string id_text = std::to_string(node_id);
  value.type = PMIX_STRING;
  value.data.string = id_text.data();
  if (pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, "elastic.node_id", &value); rc != PMIX_SUCCESS) {
    *err = fmt::format("PMIx_Put(elastic.node_id): {}", PMIx_Error_string(rc));
    return false;
  }
  if (addrs != nullptr) {
    std::string text = *addrs;
    value.data.string = text.data();
    if (pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, kAddrKey, &value); rc != PMIX_SUCCESS) {
      *err = fmt::format("PMIx_Put({}): {}", kAddrKey, PMIx_Error_string(rc));
      return false;
    }
  }
  if (pmix_status_t rc = PMIx_Commit(); rc != PMIX_SUCCESS) {
    *err = fmt::format("PMIx_Commit: {}", PMIx_Error_string(rc));
    return false;
  }
  pmix_info_t info[2];
  PMIX_INFO_CONSTRUCT(&info[0]);
  PMIX_INFO_CONSTRUCT(&info[1]);
  bool collect = true;
  int timeout = 60;
  PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
  PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &timeout, PMIX_INT);
  pmix_status_t fence = PMIx_Fence(&job, 1, info, 2);
  PMIX_INFO_DESTRUCT(&info[0]);
  PMIX_INFO_DESTRUCT(&info[1]);
  if (fence != PMIX_SUCCESS) {
    *err = fmt::format("PMIx_Fence: {}", PMIx_Error_string(fence));
    return false;
  }
  return true;
}

}  // namespace

bool PmixAvailable() {
  const char* rank = std::getenv("PMIX_RANK");
  const char* ns = std::getenv("PMIX_NAMESPACE");
  return rank != nullptr && rank[0] != '\0' && ns != nullptr && ns[0] != '\0';
}

std::vector<std::string> LocalAddresses() {
  std::vector<std::string> v4, v6;
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) == 0) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* result = nullptr;
    if (::getaddrinfo(name, nullptr, &hints, &result) == 0) {
      for (addrinfo* ai = result; ai != nullptr; ai = ai->ai_next) {
        char text[INET6_ADDRSTRLEN] = {};
        if (ai->ai_family == AF_INET) {
          ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(ai->ai_addr)->sin_addr, text,
                      sizeof(text));
        } else if (ai->ai_family == AF_INET6) {
          ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(ai->ai_addr)->sin6_addr, text,
                      sizeof(text));
        }
        if (text[0] != '\0' && !IsLoopback(text)) {
          (ai->ai_family == AF_INET ? v4 : v6).push_back(text);
        }
      }
      ::freeaddrinfo(result);
    }
  }
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) == 0) {
    for (ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
      if (ifa->ifa_addr == nullptr || !(ifa->ifa_flags & IFF_UP) ||
          (ifa->ifa_flags & IFF_LOOPBACK)) {
        continue;
      }
      char text[INET6_ADDRSTRLEN] = {};
      if (ifa->ifa_addr->sa_family == AF_INET) {
        ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(ifa->ifa_addr)->sin_addr, text,
                    sizeof(text));
        if (std::find(v4.begin(), v4.end(), text) == v4.end()) v4.push_back(text);
      } else if (ifa->ifa_addr->sa_family == AF_INET6) {
        auto* in6 = reinterpret_cast<sockaddr_in6*>(ifa->ifa_addr);
        if (IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr)) continue;
        ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
        if (std::find(v6.begin(), v6.end(), text) == v6.end()) v6.push_back(text);
      }
    }
    ::freeifaddrs(list);
  }
  v4.insert(v4.end(), v6.begin(), v6.end());
  return v4;
}

bool PmixBootstrap(PmixInfo* out, std::string* err) {
  if (!PmixAvailable()) {
    *err = "no PMIx server for this process (PMIX_RANK/PMIX_NAMESPACE unset; use srun --mpi=pmix)";
    return false;
  }
  PmixSession session;
  pmix_proc_t me;
  if (!session.Init(&me, err)) return false;
  pmix_proc_t job;
  PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);

  // Ask for our own node id: in Slurm 22.05 other ranks' PMIX_NODEID is wrong.
  uint32_t node_id = 0, nnodes = 0;
  if (!GetUint32(&me, PMIX_NODEID, &node_id, err)) return false;
  if (!GetUint32(&job, PMIX_NUM_NODES, &nnodes, err)) return false;

  std::string mine;
  if (node_id == 0) {
    mine = Join(LocalAddresses());
    if (mine.empty()) {
      *err = "node 0 has no non-loopback address to publish";
      return false;
    }
  }
  if (!PublishAndFence(job, node_id, node_id == 0 ? &mine : nullptr, err)) return false;

  std::string addrs = mine;
  if (node_id != 0) {
    // With one task per node, rank 0 is on node 0; otherwise look for the rank that is.
    uint32_t size = 0;
    std::string job_err;
    GetUint32(&job, PMIX_JOB_SIZE, &size, &job_err);
    for (uint32_t r = 0; r < std::max<uint32_t>(size, 1) && addrs.empty(); ++r) {
      pmix_proc_t peer;
      PMIX_LOAD_PROCID(&peer, me.nspace, r);
      std::string peer_node;
      if (GetString(&peer, "elastic.node_id", &peer_node) && peer_node == "0") {
        GetString(&peer, kAddrKey, &addrs);
      }
    }
    if (addrs.empty()) {
      *err = "node 0 published no address over PMIx";
      return false;
    }
  }
  out->node_rank = static_cast<int>(node_id);
  out->nnodes = static_cast<int>(nnodes);
  out->host_addresses = Split(addrs, ',');
  out->host_address = out->host_addresses.front();
  return true;  // ~PmixSession finalizes
}

bool PmixFollowerFence(std::string* err) {
  if (!PmixAvailable()) return true;  // no PMIx: task 0 has none either
  PmixSession session;
  pmix_proc_t me;
  if (!session.Init(&me, err)) return false;
  pmix_proc_t job;
  PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
  uint32_t node_id = 0;
  if (!GetUint32(&me, PMIX_NODEID, &node_id, err)) return false;
  return PublishAndFence(job, node_id, nullptr, err);  // ~PmixSession finalizes
}

}  // namespace elastic
