// GPU and CPU lists from the environment and the command line, as the agent
// reads them (hwloc_binding/gpus.h, topology.h): CUDA_VISIBLE_DEVICES and
// SLURM_STEP_GPUS mapped onto a real 16-GPU topology (ELASTIC_FUZZ_TOPOLOGY,
// an XML file of tests/topologies; this machine's own when absent), and
// --cpus-allowed. Input lines: 0 CUDA_VISIBLE_DEVICES ("-" for unset),
// 1 SLURM_STEP_GPUS, 2 a CPU list. Invariants: the selection is a subset of the
// node's GPUs without duplicates, or an error that says why; a parsed CPU list
// prints back to a list that parses to the same set.
//
// CPU lists only with numbers of at most 6 digits: Bitmap::ParseList hands
// larger ones to hwloc, which allocates a bitmap that large (a 10-digit index
// takes seconds and hundreds of MB). elasticrun refuses such --cpus-allowed
// values before they reach it (launcher/option_values.cc, ParseCpuList).
#include <cstdlib>
#include <set>
#include <string>

#include "fuzz/fuzz_input.h"
#include "hwloc_binding/gpus.h"
#include "hwloc_binding/topology.h"

#ifndef ELASTIC_FUZZ_TOPOLOGY
#define ELASTIC_FUZZ_TOPOLOGY ""
#endif

using namespace elastic;

namespace {

const std::vector<Gpu>& NodeGpus() {
  static Topology* topology = [] {
    auto* t = new Topology;
    std::string err;
    if (!t->Load(ELASTIC_FUZZ_TOPOLOGY, &err) && !t->Load("", &err)) std::abort();
    return t;
  }();
  static const std::vector<Gpu> gpus = FindGpus(*topology);
  return gpus;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::FuzzInput in(data, size);
  std::vector<std::string> f = in.Lines();
  const std::vector<Gpu>& all = NodeGpus();
  std::vector<Gpu> gpus = all;
  std::string err;
  std::string cvd_text = fuzz::Field(f, 0) == "-" ? "" : fuzz::Field(f, 0);
  GpuList cvd = ParseGpuList(DeviceListKind::kCuda, "CUDA_VISIBLE_DEVICES", cvd_text);
  GpuList step = ParseGpuList(DeviceListKind::kSlurm, "SLURM_STEP_GPUS", fuzz::Field(f, 1));
  if (SelectVisibleGpus(&cvd, &step, &gpus, &err)) {
    std::set<std::string> seen, node;
    for (const Gpu& g : all) node.insert(g.busid);
    for (const Gpu& g : gpus) {
      if (!node.count(g.busid) || !seen.insert(g.busid).second) std::abort();
    }
  } else if (err.empty()) {
    std::abort();
  }
  const std::string& list = fuzz::Field(f, 2);
  size_t digits = 0;
  for (char c : list) {
    digits = (c >= '0' && c <= '9') ? digits + 1 : 0;
    if (digits > 6) return 0;
  }
  Bitmap cpus;
  err.clear();
  if (Bitmap::ParseList("--cpus-allowed", list, &cpus, &err)) {
    Bitmap again;
    std::string err2;
    if (!Bitmap::ParseList("again", cpus.List(), &again, &err2) || !(again == cpus)) std::abort();
  } else if (err.empty()) {
    std::abort();
  }
  return 0;
}
