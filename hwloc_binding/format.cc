// The two printed forms of a plan (the modes are named by common/bind_mode.h).
#include <algorithm>
#include <fmt/format.h>

#include "hwloc_binding/binding.h"

namespace elastic {
namespace {

std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

std::string PlanToJson(const BindingPlan& plan) {
  std::string out = "[";
  for (size_t i = 0; i < plan.workers.size(); ++i) {
    const WorkerBinding& w = plan.workers[i];
    out += fmt::format("{}{{\"local_rank\": {}, \"gpu\": {}, \"cpus\": {}, \"mems\": {}}}",
                       i == 0 ? "" : ",\n ", w.local_rank,
                       w.gpu_busid ? JsonString(*w.gpu_busid) : "null", JsonString(w.cpus),
                       JsonString(w.mems));
  }
  return out + "]\n";
}

std::string PlanToTable(const BindingPlan& plan) {
  std::string out = fmt::format("binding: --bind {} --membind {}{}\n", BindModeName(plan.mode),
                                MemBindName(plan.membind),
                                plan.this_system ? "" : " (topology of another machine: not applied)");
  if (!plan.note.empty()) out += fmt::format("binding: note: {}\n", plan.note);
  out += fmt::format("{:>10}  {:<14}  {:>5}  {:<24}  {}\n", "local_rank", "gpu", "cores", "cpus", "mems");
  for (const WorkerBinding& w : plan.workers) {
    out += fmt::format("{:>10}  {:<14}  {:>5}  {:<24}  {}\n", w.local_rank, w.gpu_busid.value_or("-"),
                       w.cores, w.cpus.empty() ? "(unbound)" : w.cpus, w.mems.empty() ? "-" : w.mems);
  }
  return out;
}

int OmpThreads(const BindingPlan& plan, size_t i) {
  if (i >= plan.workers.size()) return 0;
  const WorkerBinding& me = plan.workers[i];
  if (me.cpus.empty() || me.cores <= 0) return 0;
  long sharing = std::count_if(plan.workers.begin(), plan.workers.end(),
                               [&me](const WorkerBinding& w) { return w.cpus == me.cpus; });
  return std::max(1, static_cast<int>(me.cores / sharing));
}

}  // namespace elastic
