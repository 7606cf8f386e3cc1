#include "spank_plugin/task_env.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/endpoint.h"
#include "common/node_range.h"
#include "common/parse.h"
#include "common/rdzv_port.h"

namespace elastic::spank {
namespace {

void SetConf(std::vector<std::pair<std::string, std::string>>* conf, const std::string& key,
             const std::string& value) {
  for (auto& [k, v] : *conf) {
    if (k == key) {
      v = value;
      return;
    }
  }
  conf->emplace_back(key, value);
}

}  // namespace

std::string RdzvRunId(const StepInfo& step, const ElasticOptions& options) {
  return options.rdzv_id ? *options.rdzv_id : fmt::format("{}.{}", step.job_id, step.step_id);
}

std::string ChooseRdzvPeers(const StepInfo& step, const ElasticOptions& options,
                            NodeDirectory& nodes) {
  if (!options.endpoint && !options.rdzv_id) return "";
  const std::string& list = step.job_nodelist.empty() ? step.step_nodelist : step.job_nodelist;
  std::string names;
  if (list.empty() || !nodes.FirstHosts(list, kRdzvPeerNodes, &names)) return "";
  std::string peers;
  size_t pos = 0;
  while (pos < names.size()) {
    size_t end = std::min(names.find(',', pos), names.size());
    std::string name = names.substr(pos, end - pos), address, why;
    pos = end + 1;
    if (nodes.Resolve(name, &address, &why) || nodes.SlurmNodeAddr(name, &address, &why))
      peers += (peers.empty() ? "" : ",") + address;
  }
  return peers;
}

int ChooseRdzvPort(const StepInfo& step, const ElasticOptions& options, const PluginConfig& config,
                   std::string* source) {
  if (options.rdzv_port) {
    *source = "--elastic-rdzv-port";
    return *options.rdzv_port;
  }
  if (options.endpoint && options.endpoint->port) {
    *source = "--elastic-rdzv-endpoint";
    return *options.endpoint->port;
  }
  if (!step.resv_ports.empty()) {
    long long first = 0;
    std::string head = step.resv_ports.substr(0, step.resv_ports.find_first_of("-,"));
    if (ParseInt(head, 1, 65535, &first)) {
      *source = "SLURM_STEP_RESV_PORTS";
      return static_cast<int>(first);
    }
  }
  if (config.fixed_port) {
    *source = "plugstack.conf port";
    return *config.fixed_port;
  }
  *source = fmt::format("derived from job {} step {} in {}-{}", step.job_id, step.step_id,
                        config.port_lo, config.port_hi);
  return DerivedRdzvPort(step.job_id, step.step_id, config.port_lo, config.port_hi);
}

bool ChooseRdzvHost(const StepInfo& step, const ElasticOptions& options, NodeDirectory& nodes,
                    std::string* host, std::string* source, bool* deferred_to_pmix,
                    std::string* err) {
  *deferred_to_pmix = false;
  std::string why;
  if (options.endpoint) {
    // Slurm node names often do not resolve: try Slurm's NodeAddr too, else pass it as given.
    const std::string& name = options.endpoint->host;
    if (nodes.Resolve(name, host, &why)) {
      *source = "--elastic-rdzv-endpoint";
    } else if (nodes.SlurmNodeAddr(name, host, &why)) {
      *source = "--elastic-rdzv-endpoint (Slurm NodeAddr)";
    } else {
      *host = name;
      *source = "--elastic-rdzv-endpoint (unresolved)";
    }
    return true;
  }
  std::string first;
  if (step.step_nodelist.empty() || !nodes.FirstHost(step.step_nodelist, &first)) {
    *err = fmt::format("cannot find the step's first node: SLURM_STEP_NODELIST is '{}'",
                       step.step_nodelist);
    return false;
  }
  if (step.pmix) {
    // PMIx comes before name resolution: elasticrun asks node 0 for its address
    // (launcher/pmix_bootstrap.h). The node name is only a placeholder.
    *host = first;
    *source = "pmix";
    *deferred_to_pmix = true;
    return true;
  }
  std::string dns_why, slurm_why;
  if (nodes.Resolve(first, host, &dns_why)) {
    *source = "name resolution";
    return true;
  }
  if (nodes.SlurmNodeAddr(first, host, &slurm_why)) {
    *source = "Slurm NodeAddr";
    return true;
  }
  *err = fmt::format(
      "cannot find the address of the step's first node '{}': no --elastic-rdzv-endpoint, no PMIx "
      "in the step (srun --mpi=pmix), name resolution failed ({}), Slurm's NodeAddr failed ({}); "
      "give --elastic-rdzv-endpoint=ADDRESS",
      first, dns_why, slurm_why);
  return false;
}

StepLayout WholeStepLayout(uint32_t nnodes, uint32_t ntasks) {
  return StepLayout{nnodes, ntasks, nnodes, fmt::format("{} node{}", nnodes, nnodes == 1 ? "" : "s")};
}

StepLayout NodeLayout(const StepInfo& step) {
  return StepLayout{step.nnodes, step.local_tasks, 1, fmt::format("node {}", step.node_id)};
}

bool ValidateStepLayout(const StepLayout& layout, const ElasticOptions& options,
                        const PluginConfig& config, std::string* err) {
  if (layout.tasks > layout.nodes_seen && options.nproc_per_node) {
    // Each task is one worker (docs/user.md, "One task per GPU"): a worker count
    // of its own would contradict the tasks.
    *err = fmt::format(
        "--elastic-nproc-per-node={} with {} tasks on {}: with several tasks per node each task "
        "is one worker; drop --elastic-nproc-per-node, or run one task per node "
        "(--ntasks-per-node=1 --gpus-per-node=G)",
        FormatNprocSpec(*options.nproc_per_node), layout.tasks, layout.where);
    return false;
  }
  // More nodes than MAX is allowed: the extra ones stand by as spares.
  return ValidateMinNodes(layout, options, err) && ValidateNodeMultiple(layout, options, config, err);
}

bool ValidateMinNodes(const StepLayout& layout, const ElasticOptions& options, std::string* err) {
  if (!options.nnodes) return true;  // MIN is the step's node count
  auto [lo, hi] = *options.nnodes;
  if (static_cast<int>(layout.nnodes) >= lo) return true;
  // Agents of another step (or job) may join this rendezvous: scale-up, a
  // shared id and endpoint (docs/user.md). Only then can a round still form.
  if (options.rdzv_id || options.endpoint || options.join) return true;
  // A running step never gains nodes: without this the agents would wait out
  // join_timeout (600 s) for nodes that cannot come.
  std::string nodes = lo == hi ? fmt::format("-N{}", lo) : fmt::format("-N{}-{} --no-kill", lo, hi);
  *err = fmt::format(
      "the step has {} node{} and --elastic={} needs at least {}: add {} (a running step never "
      "gains nodes)",
      layout.nnodes, layout.nnodes == 1 ? "" : "s",
      lo == hi ? std::to_string(lo) : FormatNodeRange(NodeRange{lo, hi}), lo, nodes);
  return false;
}

bool ValidateNodeMultiple(const StepLayout& layout, const ElasticOptions& options,
                          const PluginConfig& config, std::string* err) {
  std::optional<int> k = options.node_multiple ? options.node_multiple : config.node_multiple;
  if (!k) return true;
  int nodes = static_cast<int>(layout.nnodes);
  NodeRange range = options.nnodes ? NodeRange{options.nnodes->first, options.nnodes->second}
                                   : NodeRange{nodes, nodes};
  std::string what = options.node_multiple
                         ? fmt::format("--elastic-node-multiple={} with --elastic={}", *k,
                                       FormatNodeRange(range))
                         : fmt::format("plugstack.conf node_multiple={} with --elastic={}", *k,
                                       FormatNodeRange(range));
  return CheckNodeMultiple(what, *k, range, err);
}

int DefaultMaxRestarts(uint32_t nnodes, const ElasticOptions& options, const PluginConfig& config) {
  if (options.max_restarts) return *options.max_restarts;
  if (config.max_restarts) return *config.max_restarts;
  // A lost node counts as a restart: --elastic=MIN:MAX on N nodes promises to
  // go on after N - MIN losses (spares included), so that is the budget.
  int lo = options.nnodes ? options.nnodes->first : static_cast<int>(nnodes);
  return std::max(0, static_cast<int>(nnodes) - lo);
}

bool BuildTaskEnv(const StepInfo& step, const ElasticOptions& options, const PluginConfig& config,
                  NodeDirectory& nodes, EnvList* env, std::string* err) {
  if (step.nnodes == 0 || step.node_id >= step.nnodes) {
    *err = fmt::format("bad step layout from Slurm: node id {} of {} nodes", step.node_id,
                       step.nnodes);
    return false;
  }
  EnvList out;
  // Room for every variable at once: also keeps GCC 12 at -O3 from a false
  // -Warray-bounds on the first emplace_back into an empty vector.
  out.reserve(48);
  int lo = options.nnodes ? options.nnodes->first : static_cast<int>(step.nnodes);
  int hi = options.nnodes ? options.nnodes->second : static_cast<int>(step.nnodes);
  out.emplace_back("PET_NNODES", FormatNodeRange(NodeRange{lo, hi}));
  out.emplace_back("PET_NODE_RANK", std::to_string(step.node_id));
  if (step.local_tasks > 1) {
    // One task per GPU: local task 0 runs the agent and one worker per task of the
    // node, each with its task's GPUs and CPUs (launcher/task_group.h).
    out.emplace_back("PET_NPROC_PER_NODE", std::to_string(step.local_tasks));
    out.emplace_back("ELASTIC_SPANK_TASK_GROUP",
                     fmt::format("{}/{}", step.local_task_id, step.local_tasks));
    // Where the node's tasks meet: run ids repeat (a fresh cluster), a running
    // slurmstepd's pid does not.
    out.emplace_back("ELASTIC_SPANK_TASK_GROUP_KEY",
                     fmt::format("{}.{}-{}", step.job_id, step.step_id, step.stepd_pid));
  } else if (options.nproc_per_node) {
    out.emplace_back("PET_NPROC_PER_NODE", FormatNprocSpec(*options.nproc_per_node));
  }  // else elasticrun counts the step's GPUs (launcher/step_gpus.h)
  if (options.node_multiple) {
    out.emplace_back("PET_NODE_MULTIPLE", std::to_string(*options.node_multiple));
  } else if (config.node_multiple) {
    out.emplace_back("PET_NODE_MULTIPLE", std::to_string(*config.node_multiple));
  }
  out.emplace_back("PET_MAX_RESTARTS",
                   std::to_string(DefaultMaxRestarts(step.nnodes, options, config)));

  std::string host, host_source, port_source;
  bool deferred = false;
  if (!ChooseRdzvHost(step, options, nodes, &host, &host_source, &deferred, err)) return false;
  int port = ChooseRdzvPort(step, options, config, &port_source);
  out.emplace_back("PET_RDZV_BACKEND", "c10d");
  out.emplace_back("PET_RDZV_ENDPOINT", FormatEndpoint(host, port));
  out.emplace_back("PET_RDZV_ID", RdzvRunId(step, options));
  if (std::string peers = ChooseRdzvPeers(step, options, nodes); !peers.empty())
    out.emplace_back("ELASTIC_RDZV_PEERS", peers);

  std::vector<std::pair<std::string, std::string>> conf;
  conf.reserve(4 + options.rdzv_conf.size());
  conf.emplace_back("expected_nodes", std::to_string(step.nnodes));
  // Without an explicit endpoint the host is node 0 by construction (its name may
  // not resolve, so elasticrun could not match it); with one, elasticrun matches
  // the endpoint against its own addresses.
  if (!options.endpoint) conf.emplace_back("is_host", step.node_id == 0 ? "1" : "0");
  if (!step.munge_socket.empty()) conf.emplace_back("munge_socket", step.munge_socket);
  for (const auto& [key, value] : options.rdzv_conf) SetConf(&conf, key, value);
  std::string conf_text;
  for (const auto& [key, value] : conf) {
    if (!conf_text.empty()) conf_text += ',';
    conf_text += key + '=' + value;
  }
  out.emplace_back("PET_RDZV_CONF", conf_text);

  if (options.bind) {
    out.emplace_back("PET_BIND", BindModeName(*options.bind));
  } else if (config.bind) {
    out.emplace_back("PET_BIND", BindModeName(*config.bind));
  }
  if (options.log_dir) {
    // A log directory on a shared filesystem is seen by every node: one level per
    // node (its Slurm name) keeps each node's attempt_N/LOCAL_RANK/ apart and
    // findable; elasticrun adds a directory per run inside it.
    std::string node = step.node_name.empty() || step.node_name.find('/') != std::string::npos
                           ? fmt::format("node{}", step.node_id)
                           : step.node_name;
    out.emplace_back("PET_LOG_DIR", *options.log_dir + "/" + node);
    // srun has no --elastic- form of --tee/--redirects: a log directory without
    // files in it would be no use, so both streams go to the console and the files
    // unless the user exported PET_TEE or PET_REDIRECTS.
    if (!step.output_files_chosen) out.emplace_back("PET_TEE", "3");
  }
  if (options.no_python) out.emplace_back("PET_NO_PYTHON", "1");
  if (options.events) out.emplace_back("PET_EVENTS", *options.events);
  if (options.grow) out.emplace_back("PET_GROW", FormatGrowOptions(*options.grow));
  // PET_ beats an exported TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE in elasticrun: the flag wins.
  if (options.log_line_prefix_template) {
    out.emplace_back("PET_LOG_LINE_PREFIX_TEMPLATE", *options.log_line_prefix_template);
  }
  if (options.python) {
    out.emplace_back("PET_PYTHON", *options.python);
  } else if (config.python) {
    out.emplace_back("PET_PYTHON", *config.python);
  }
  if (options.preload) {
    out.emplace_back("PET_PRELOAD", *options.preload);
  } else if (config.preload) {
    out.emplace_back("PET_PRELOAD", *config.preload);
  }
  if (options.health_check) {
    out.emplace_back("PET_HEALTH_CHECK", *options.health_check);
  } else if (config.health_check) {
    out.emplace_back("PET_HEALTH_CHECK", *config.health_check);
  }
  if (options.requeue) {
    out.emplace_back("PET_REQUEUE", std::to_string(*options.requeue));
  } else if (config.requeue) {
    out.emplace_back("PET_REQUEUE", std::to_string(*config.requeue));
  }
  // For elasticrun's logs and the PMIx bootstrap (pmix_bootstrap.h).
  out.emplace_back("ELASTIC_SPANK_RDZV_SOURCE", host_source + "; port: " + port_source);
  if (deferred) out.emplace_back("ELASTIC_SPANK_PMIX_ENDPOINT", "1");
  *env = std::move(out);
  return true;
}

}  // namespace elastic::spank
