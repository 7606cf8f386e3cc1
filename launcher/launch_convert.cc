// Turning elasticrun's options, read against the table (launch_options.h), into
// a LaunchConfig: every value parsed and checked, each error naming where the
// value came from (the option, its PET_ variable or torchrun's variable).
#include "launcher/launch_config.h"

#include <string.h>
#include <unistd.h>

#include <cerrno>
#include <fmt/format.h>
#include <random>

#include "common/endpoint.h"
#include "common/grow_options.h"
#include "common/log_escape.h"
#include "common/module_list.h"
#include "common/node_range.h"
#include "common/parse.h"
#include "common/peer_list.h"
#include "launcher/duplicate_filter.h"
#include "launcher/launch_options.h"
#include "launcher/option_values.h"
#include "launcher/slurm_stop.h"
#include "launcher/step_gpus.h"
#include "launcher/stuck_worker.h"
#include "rendezvous/rendezvous_settings.h"

namespace elastic {
namespace {

// Set by torchrun's agent for its workers (from --signals-to-handle), never read from
// the user: given, it is ignored with a warning, as torchrun overwrites it.
constexpr const char* kWorkerSignalsVar = "TORCHELASTIC_SIGNALS_TO_HANDLE";
// A version 4 UUID as torchrun's --standalone run id (uuid.uuid4()).
std::string RandomUuid() {
  unsigned char b[16] = {};
  std::random_device random;
  for (unsigned char& byte : b) byte = static_cast<unsigned char>(random());
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
  std::string out;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += fmt::format("{:02x}", b[i]);
  }
  return out;
}
class Converter {
 public:
  Converter(const EnvMap& env, OptionValues values, LaunchConfig* config)
      : env_(env), c_(config), values_(std::move(values)) {}

  bool Convert(std::string* err);

 private:
  bool ConvertRendezvous(std::string* err);
  bool ConvertBackend(std::string* err);
  bool ConvertTorchrunOnly(std::string* err);
  void ConvertSlurmDefaults();
  bool ConvertBinding(std::string* err);
  bool ConvertResilience(std::string* err);
  bool ConvertUninterruptibleTimeout(std::string* err);
  void ConvertGpuLists();
  const OptionValue& V(Opt opt) const { return values_[static_cast<size_t>(opt)]; }
  const std::string& What(Opt opt) const { return V(opt).What(); }
  const std::string& Text(Opt opt) const { return V(opt).text; }
  const std::string* Env(const char* name) const {
    auto it = env_.find(name);
    return it == env_.end() ? nullptr : &it->second;
  }

  const EnvMap& env_;
  LaunchConfig* c_;
  OptionValues values_;
};

bool Converter::Convert(std::string* err) {
  auto flag = [&](Opt opt, bool* out) { return ParseBool(What(opt), Text(opt), out, err); };
  if (!flag(Opt::kNoPython, &c_->spec.no_python) || !flag(Opt::kModule, &c_->spec.module) ||
      !flag(Opt::kRunPath, &c_->spec.run_path) || !flag(Opt::kVirtualLocalRank, &c_->spec.virtual_local_rank) ||
      !flag(Opt::kVerbose, &c_->agent.verbose)) {
    return false;
  }
  if (c_->spec.module && c_->spec.no_python) {
    *err = "-m/--module: cannot be combined with --no-python";
    return false;
  }
  if (!ParseNprocSpec(What(Opt::kNprocPerNode), Text(Opt::kNprocPerNode), &c_->spec.nproc_spec, err)) {
    return false;
  }
  if (c_->agent.spank_wrapped && !V(Opt::kNprocPerNode).given) {
    // srun --elastic without --elastic-nproc-per-node: the plugin forwards no
    // count (it decides none), the default there is the step's GPUs, else 1.
    int nproc = 1;
    if (!StepDefaultNproc(env_, &nproc, err)) return false;
    c_->spec.nproc_spec = NprocSpec{NprocSpec::Kind::kCount, nproc};
  }
  if (c_->spec.nproc_spec.kind == NprocSpec::Kind::kCount) c_->spec.nproc = c_->spec.nproc_spec.count;
  if (!ParseSeconds(What(Opt::kMonitorInterval), Text(Opt::kMonitorInterval), &c_->agent.monitor_interval_ms,
                    err) ||
      !ParseSeconds(What(Opt::kShutdownTimeout), Text(Opt::kShutdownTimeout), &c_->agent.shutdown_timeout_ms,
                    err)) {
    return false;
  }
  c_->spec.role = Text(Opt::kRole);
  if (c_->spec.role.empty()) {
    *err = What(Opt::kRole) + ": must not be empty";
    return false;
  }
  if (!ParseStdSpec(What(Opt::kRedirects), Text(Opt::kRedirects), &c_->agent.redirects, err) ||
      !ParseStdSpec(What(Opt::kTee), Text(Opt::kTee), &c_->agent.tee, err) ||
      !ParseRankList(What(Opt::kLocalRanksFilter), Text(Opt::kLocalRanksFilter), &c_->agent.local_ranks_filter,
                     err) ||
      !ParseSignals(What(Opt::kSignalsToHandle), Text(Opt::kSignalsToHandle), &c_->spec.signals_to_handle, err)) {
    return false;
  }
  c_->spec.signals_to_handle_text = Text(Opt::kSignalsToHandle);
  if (const std::string* given = Env(kWorkerSignalsVar); given && *given != c_->spec.signals_to_handle_text) {
    c_->warnings.push_back(fmt::format("{}={}: ignored, as torchrun does (it sets the variable for its workers "
                                       "from --signals-to-handle); the workers get {}; use --signals-to-handle "
                                       "or PET_SIGNALS_TO_HANDLE", kWorkerSignalsVar, EscapeForLog(*given),
                                       c_->spec.signals_to_handle_text));
  }
  c_->agent.log_dir = Text(Opt::kLogDir);
  c_->agent.events_path = Text(Opt::kEvents);
  c_->agent.log_line_prefix_template = Text(Opt::kLogLinePrefixTemplate);
  if (!ConvertTorchrunOnly(err)) return false;
  c_->spec.python = Text(Opt::kPython);
  if (c_->spec.python.empty()) {
    *err = What(Opt::kPython) + ": must not be empty";
    return false;
  }
  ConvertGpuLists();
  if (!ParseModuleList(What(Opt::kPreload), Text(Opt::kPreload), &c_->spec.preload, err)) return false;
  return ConvertRendezvous(err) && ConvertBinding(err) && ConvertResilience(err);
}

// torchrun's options that mean nothing here (one warning each when set), and
// --numa-binding as a --bind default.
bool Converter::ConvertTorchrunOnly(std::string* err) {
  auto& warnings = c_->warnings;
  // torchrun's handlers (torch.distributed.elastic.events.handlers): console logs
  // each event, null and dynamic_rendezvous drop them.
  const std::string& handler = Text(Opt::kEventLogHandler);
  c_->agent.events_to_console = handler == "console";
  if (handler != "null" && handler != "dynamic_rendezvous" && handler != "console") {
    warnings.push_back(fmt::format("{}: '{}' ignored: elasticrun's handlers are console and null (its "
                                   "event record: --events)",
                                   What(Opt::kEventLogHandler), handler));
  }
  c_->agent.duplicate_stdout_filters = ParseDuplicateFilters(Text(Opt::kDuplicateStdoutFilters));
  c_->agent.duplicate_stderr_filters = ParseDuplicateFilters(Text(Opt::kDuplicateStderrFilters));
  // torch registers one entry point, `default` (DefaultLogsSpecs): what elasticrun does.
  if (!Text(Opt::kLogsSpecs).empty() && Text(Opt::kLogsSpecs) != "default") {
    warnings.push_back(fmt::format("{}: '{}' ignored: elasticrun has no torchrun.logs_specs entry points "
                                   "(--log-dir, --redirects, --tee, --log-line-prefix-template)",
                                   What(Opt::kLogsSpecs), Text(Opt::kLogsSpecs)));
  }
  const std::string& numa = Text(Opt::kNumaBinding);
  if (numa.empty()) return true;
  if (!OneOf(What(Opt::kNumaBinding), numa, {"node", "socket", "exclusive", "core-complex"}, err)) return false;
  if (V(Opt::kBind).given) {
    warnings.push_back(fmt::format("{}={}: ignored: {} says how to bind", What(Opt::kNumaBinding), numa,
                                   What(Opt::kBind)));
    return true;
  }
  if (numa == "socket" || numa == "core-complex") {
    warnings.push_back(fmt::format("{}={}: binding each worker to the CPUs of its GPU's NUMA node instead "
                                   "(--bind=gpu; elasticrun binds per NUMA node)",
                                   What(Opt::kNumaBinding), numa));
  }
  values_[static_cast<size_t>(Opt::kBind)].text = numa == "exclusive" ? "gpu-exclusive" : "gpu";
  values_[static_cast<size_t>(Opt::kBind)].source = What(Opt::kNumaBinding);
  return true;
}

bool Converter::ConvertResilience(std::string* err) {
  long long n = 0;
  if (!ParseIntNamed(What(Opt::kCrashLoopCount), Text(Opt::kCrashLoopCount), 0, 1000000, &n, err) ||
      !ParseSeconds(What(Opt::kCrashLoopWindow), Text(Opt::kCrashLoopWindow), &c_->agent.crash_loop_window_ms, err) ||
      !ParseSeconds(What(Opt::kHealthCheckTimeout), Text(Opt::kHealthCheckTimeout),
                    &c_->agent.health_check_timeout_ms, err)) {
    return false;
  }
  c_->agent.crash_loop_count = static_cast<int>(n);
  if (!ParseIntNamed(What(Opt::kNoProgressRestarts), Text(Opt::kNoProgressRestarts), 0, 1000000, &n, err)) return false;
  c_->agent.no_progress_restarts = static_cast<int>(n);
  c_->agent.progress_file = Text(Opt::kProgressFile);
  if (!ConvertUninterruptibleTimeout(err)) return false;
  if (!ParseIntNamed(What(Opt::kRequeue), Text(Opt::kRequeue), 0, 1000000, &n, err)) return false;
  c_->agent.requeue = static_cast<int>(n);
  if (!Text(Opt::kGrow).empty()) {
    GrowOptions grow;
    if (!ParseGrowOptions(What(Opt::kGrow), Text(Opt::kGrow), &grow, err)) return false;
    c_->agent.grow = grow;
  }
  if (!ParseSeconds(What(Opt::kSlurmCommentInterval), Text(Opt::kSlurmCommentInterval),
                    &c_->agent.slurm_comment_interval_ms, err))
    return false;
  if (c_->agent.health_check_timeout_ms <= 0) {
    *err = fmt::format("{}: '{}': must be more than 0 seconds", What(Opt::kHealthCheckTimeout),
                       Text(Opt::kHealthCheckTimeout));
    return false;
  }
  c_->agent.health_check = Text(Opt::kHealthCheck);
  if (!ParseNativeStacksMode(What(Opt::kNativeStacks), Text(Opt::kNativeStacks), &c_->agent.native_stacks, err) ||
      !ParseSeconds(What(Opt::kNativeStacksTimeout), Text(Opt::kNativeStacksTimeout),
                    &c_->agent.native_stacks_timeout_ms, err)) {
    return false;
  }
  if (c_->agent.native_stacks_timeout_ms <= 0) {
    *err = fmt::format("{}: '{}': must be more than 0 seconds", What(Opt::kNativeStacksTimeout),
                       Text(Opt::kNativeStacksTimeout));
    return false;
  }
  return ParseSeconds(What(Opt::kConsoleDrainTimeout), Text(Opt::kConsoleDrainTimeout),
                      &c_->agent.console_drain_timeout_ms, err);
}

// torchrun reads TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT (seconds; unset or 0: no
// check). Here every wait has a deadline: torchrun's 0 is the default, said once.
bool Converter::ConvertUninterruptibleTimeout(std::string* err) {
  const OptionValue& v = V(Opt::kUninterruptibleTimeout);
  long long ms = 0;
  if (!ParseSeconds(v.What(), v.text, &ms, err)) return false;
  if (ms <= 0 && v.source == "TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT") {
    c_->warnings.push_back(fmt::format("{}={}: torchrun's 'no check'; elasticrun never waits for a kill "
                                       "without a deadline: {} s after SIGKILL", v.source, v.text,
                                       kDefaultUninterruptibleTimeoutMs / 1000));
    ms = kDefaultUninterruptibleTimeoutMs;
  } else if (ms <= 0) {
    *err = fmt::format("{}: '{}': must be more than 0 seconds", v.What(), v.text);
    return false;
  }
  c_->agent.uninterruptible_timeout_ms = ms;
  return true;
}

bool Converter::ConvertRendezvous(std::string* err) {
  RendezvousOptions& r = c_->spec.rdzv;
  NodeRange nodes;
  if (!ParseBool(What(Opt::kStandalone), Text(Opt::kStandalone), &r.standalone, err) ||
      !ParseNodeRange(What(Opt::kNnodes), Text(Opt::kNnodes), &nodes, err)) {
    return false;
  }
  r.min_nodes = nodes.min;
  r.max_nodes = nodes.max;
  long long n = 0;
  if (V(Opt::kNodeRank).given) {
    if (!ParseIntNamed(What(Opt::kNodeRank), Text(Opt::kNodeRank), 0, 100000, &n, err)) return false;
    r.node_rank = static_cast<int>(n);
  }
  if (!ParseIntNamed(What(Opt::kMaxRestarts), Text(Opt::kMaxRestarts), 0, 1000000, &n, err)) return false;
  r.max_restarts = static_cast<int>(n);
  if (!ParseNodeMultiple(What(Opt::kNodeMultiple), Text(Opt::kNodeMultiple), nodes,
                         &r.node_multiple, err))
    return false;
  if (!ConvertBackend(err)) return false;
  r.run_id = Text(Opt::kRdzvId);
  // Every node prints and compares the run id: the protocol's rule, here at the
  // edge, not as "bad 'challenge' message" on the other nodes later (issue 19 item 10).
  if (!CheckProtocolName(What(Opt::kRdzvId), r.run_id, err)) return false;
  if (!ParseKeyValues(What(Opt::kRdzvConf), Text(Opt::kRdzvConf), &r.conf, err)) return false;
  r.local_addr = Text(Opt::kLocalAddr);
  if (const std::string* token = Env("ELASTIC_RDZV_TOKEN")) r.token = *token;
  if (const std::string* file = Env("ELASTIC_RDZV_TOKEN_FILE")) r.token_file = *file;
  // The run's candidate nodes, asked before hosting or joining the endpoint (issue 19
  // item 17; under srun the plugin sets it: rendezvous/host_discovery.h).
  if (const std::string* peers = Env("ELASTIC_RDZV_PEERS"); peers && !ParsePeerList(*peers, &r.peers, err))
    return false;
  // A command line is world-readable (/proc/PID/cmdline); PET_RDZV_CONF, the
  // plugin's path, is in the environment, readable by this user only.
  for (const auto& [key, value] : r.conf)
    if (key == "token" && V(Opt::kRdzvConf).source == V(Opt::kRdzvConf).name) r.token_in_argv = true;
  if (r.standalone) {
    // torchrun: --standalone means one node with a private local rendezvous and
    // a fresh run id (a uuid4) whatever --rdzv-id says.
    r.min_nodes = r.max_nodes = 1;
    r.backend = "c10d";
    r.endpoint.reset();
    r.run_id = RandomUuid();
  }
  ConvertSlurmDefaults();
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) r.hostname = host;
  return true;
}

// --rdzv-backend and where the rendezvous is. static (torchrun's default) and c10d
// are both elasticrun's rendezvous; static takes its endpoint from --master-addr
// and --master-port when --rdzv-endpoint is not given (torchrun's rule), and only
// when there is something to say: a static backend named or --master-addr given
// (else a multi-node run without an endpoint keeps its clear error).
bool Converter::ConvertBackend(std::string* err) {
  RendezvousOptions& r = c_->spec.rdzv;
  r.backend = Text(Opt::kRdzvBackend);
  if (r.backend == "etcd" || r.backend == "etcd-v2") {
    *err = fmt::format(
        "{}: '{}': elasticrun has no etcd rendezvous; use --rdzv-backend=c10d --rdzv-endpoint=HOST:PORT "
        "(elasticrun's own rendezvous: one agent hosts it, no etcd server needed, and it fails over)",
        What(Opt::kRdzvBackend), r.backend);
    return false;
  }
  if (!OneOf(What(Opt::kRdzvBackend), r.backend, {"static", "c10d"}, err)) return false;
  if (!OneOf(What(Opt::kStartMethod), Text(Opt::kStartMethod), {"spawn", "fork", "forkserver"}, err)) {
    return false;
  }
  if (!Text(Opt::kRdzvEndpoint).empty()) {
    Endpoint endpoint;
    if (!ParseEndpointOrFreePort(What(Opt::kRdzvEndpoint), Text(Opt::kRdzvEndpoint), &endpoint, err)) return false;
    r.endpoint = std::move(endpoint);
  }
  Endpoint master;
  if (!ParseEndpoint(What(Opt::kMasterAddr), Text(Opt::kMasterAddr), &master, err)) return false;
  if (master.port) {
    *err = fmt::format("{}: '{}': give the port with --master-port (an IPv6 address as [ADDR])",
                       What(Opt::kMasterAddr), Text(Opt::kMasterAddr));
    return false;
  }
  long long port = 0;
  if (!ParseIntNamed(What(Opt::kMasterPort), Text(Opt::kMasterPort), 0, 65535, &port, err)) return false;
  master.port = static_cast<int>(port);
  bool static_named = V(Opt::kRdzvBackend).given || V(Opt::kMasterAddr).given;
  if (!r.endpoint && r.backend == "static" && static_named && r.max_nodes > 1) r.endpoint = master;
  return true;
}

// Under Slurm (a plain `srun elasticrun`, or the plugin) the step says which node
// this is and how many are coming: defaults for --node-rank and for the
// rendezvous' expected node count (--rdzv-conf expected_nodes wins). Values that
// are not numbers, or a count outside --nnodes, are ignored.
void Converter::ConvertSlurmDefaults() {
  RendezvousOptions& r = c_->spec.rdzv;
  long long value = 0;
  const std::string* node_id = Env("SLURM_NODEID");
  if (!V(Opt::kNodeRank).given && node_id && ParseInt(*node_id, 0, 1 << 20, &value)) {
    r.node_rank = static_cast<int>(value);
  }
  const std::string* nnodes = Env("SLURM_NNODES");
  if (nnodes && ParseInt(*nnodes, 1, 1 << 20, &value) && value >= r.min_nodes && value <= r.max_nodes) {
    r.expected_nodes = static_cast<int>(value);
  }
}

bool Converter::ConvertBinding(std::string* err) {
  c_->spec.topology = Text(Opt::kTopology);
  c_->spec.cpus_allowed = Text(Opt::kCpusAllowed);
  c_->spec.gpu_vendor = Text(Opt::kGpuVendor);
  if (!ParseBindMode(What(Opt::kBind), Text(Opt::kBind), &c_->spec.bind, err) ||
      !ParseMemBind(What(Opt::kMembind), Text(Opt::kMembind), &c_->spec.membind, err) ||
      !ParseCpuList(What(Opt::kCpusAllowed), c_->spec.cpus_allowed, err)) {
    return false;
  }
  if (!c_->spec.gpu_vendor.empty() && !OneOf(What(Opt::kGpuVendor), c_->spec.gpu_vendor, {"nvidia", "amd"}, err)) {
    return false;
  }
  if (!c_->spec.topology.empty() && access(c_->spec.topology.c_str(), R_OK) != 0) {
    *err = fmt::format("{}: '{}': {}", What(Opt::kTopology), c_->spec.topology, strerror(errno));
    return false;
  }
  return true;
}

// The GPU variables, parsed once: --nproc-per-node=gpu|auto counts them and the
// binding maps them onto the topology. A list that does not parse is an error
// only where it is used (a fixed --nproc-per-node with --bind=none never reads it).
void Converter::ConvertGpuLists() {
  GpuLists& g = c_->spec.gpus;
  if (const std::string* cvd = Env("CUDA_VISIBLE_DEVICES")) {
    g.cuda_visible_devices = ParseGpuList(DeviceListKind::kCuda, "CUDA_VISIBLE_DEVICES", *cvd);
  }
  for (const char* name : {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS"}) {
    if (const std::string* text = Env(name)) {
      g.step_gpus = ParseGpuList(DeviceListKind::kSlurm, name, *text);
      break;
    }
  }
}
}  // namespace

ParseOutcome ParseLaunchConfig(int argc, const char* const* argv, const EnvMap& env,
                               LaunchConfig* config, std::string* out, std::string* err) {
  for (const char* name : {"SLURM_JOB_END_TIME", kJobEndTimeVar}) {
    auto it = env.find(name);
    if (it != env.end() && !config->agent.job_end_time) config->agent.job_end_time = ParseJobEndTime(it->second);
  }
  RawOptions raw;
  ParseOutcome outcome = ReadOptions(argc, argv, env, &raw, out, err);
  if (outcome != ParseOutcome::kRun) return outcome;
  config->agent.spank_wrapped = raw.spank_wrapped;
  config->agent.print_binding = raw.print_binding;
  if (!raw.program.empty()) {
    config->spec.program = raw.program.front();
    config->spec.args.assign(raw.program.begin() + 1, raw.program.end());
  }
  Converter converter(env, std::move(raw.values), config);
  if (!converter.Convert(err)) return ParseOutcome::kUsageError;
  if (config->spec.program.empty() && config->agent.print_binding.empty()) {
    *err = "missing the program to run (e.g. elasticrun --nproc-per-node=4 train.py); see --help";
    return ParseOutcome::kUsageError;
  }
  return ParseOutcome::kRun;
}

}  // namespace elastic
