// plan_perftest: what binding adds to elasticrun's launch latency. For each
// topology: the first CountGpus + PlanBinding in a fresh process (what every
// elasticrun start pays: load the topology, find GPUs, plan), a topology load
// alone, and a re-plan with the topology already loaded (worker restarts).
// Prints median / p90 / min of wall time and of CPU time over N runs; on a
// busy machine the CPU time is the stable figure (wall includes waiting for a CPU).
//
//   plan_perftest [--runs N] [--topology FILE]...   (default: topo.jrc0386.xml,
//   the largest file of shared/topologies, then this machine)
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "hwloc_binding/binding.h"
#include "hwloc_binding/topology.h"

namespace {

struct Sample {
  double wall_ms;
  double cpu_ms;
};

double NowMs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "plan_perftest: %s\n", message.c_str());
  std::exit(1);
}

Sample Time(const std::function<void()>& body) {
  double wall = NowMs(CLOCK_MONOTONIC);
  double cpu = NowMs(CLOCK_PROCESS_CPUTIME_ID);
  body();
  return {NowMs(CLOCK_MONOTONIC) - wall, NowMs(CLOCK_PROCESS_CPUTIME_ID) - cpu};
}

// Runs `body` in a forked child (which has loaded nothing yet) and returns its timing.
Sample TimeInFreshChild(const std::function<void()>& body) {
  int fds[2];
  if (pipe(fds) != 0) Die("pipe failed");
  pid_t pid = fork();
  if (pid < 0) Die("fork failed");
  if (pid == 0) {
    close(fds[0]);
    Sample sample = Time(body);
    _exit(write(fds[1], &sample, sizeof sample) == sizeof sample ? 0 : 1);
  }
  close(fds[1]);
  Sample sample{};
  bool ok = read(fds[0], &sample, sizeof sample) == sizeof sample;
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!ok || !WIFEXITED(status) || WEXITSTATUS(status) != 0) Die("child failed");
  return sample;
}

void Report(const char* what, const std::string& source, std::vector<Sample> samples) {
  auto stats = [&](double Sample::*field) {
    std::vector<double> ms;
    for (const Sample& s : samples) ms.push_back(s.*field);
    std::sort(ms.begin(), ms.end());
    return std::vector<double>{ms[ms.size() / 2], ms[std::min(ms.size() - 1, ms.size() * 9 / 10)], ms.front()};
  };
  std::vector<double> wall = stats(&Sample::wall_ms);
  std::vector<double> cpu = stats(&Sample::cpu_ms);
  std::printf("%-36s %-18s wall median %7.2f p90 %7.2f min %6.2f ms | cpu median %6.2f ms\n", what,
              source.c_str(), wall[0], wall[1], wall[2], cpu[0]);
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 50;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--topology") == 0 && i + 1 < argc) {
      files.push_back(argv[++i]);
    } else {
      Die(std::string("usage: plan_perftest [--runs N] [--topology FILE]... (bad argument '") + argv[i] + "')");
    }
  }
  if (files.empty()) {
    files.push_back(std::string(ELASTIC_TOPOLOGIES_DIR) + "/topo.jrc0386.xml");
    files.push_back("");  // this machine
  }
  unsetenv("HWLOC_XMLFILE");
  std::printf("runs: %d per line (plus one warm-up)\n", runs);
  for (const std::string& file : files) {
    std::string source = file.empty() ? "this machine" : file.substr(file.rfind('/') + 1);
    std::string err;
    elastic::BindingRequest request;
    request.topology_file = file;
    auto first_plan = [&] {
      int gpus = 0;
      elastic::BindingPlan plan;
      elastic::BindingRequest child = request;
      if (!elastic::CountGpus(child, &gpus, &err)) Die(err);  // --nproc-per-node=gpu
      child.nproc = std::max(gpus, 1);
      if (!elastic::PlanBinding(child, &plan, &err)) Die(err);
    };
    std::vector<Sample> samples;
    TimeInFreshChild(first_plan);
    for (int i = 0; i < runs; ++i) samples.push_back(TimeInFreshChild(first_plan));
    Report("first CountGpus+PlanBinding (fresh)", source, samples);

    samples.clear();
    auto load = [&] {
      elastic::Topology topology;
      if (!topology.Load(file, &err)) Die(err);
    };
    load();
    for (int i = 0; i < runs; ++i) samples.push_back(Time(load));
    Report("topology load alone (warm process)", source, samples);

    int gpus = 0;
    if (!elastic::CountGpus(request, &gpus, &err)) Die(err);
    request.nproc = std::max(gpus, 1);
    elastic::BindingPlan plan;
    samples.clear();
    for (int i = 0; i < runs; ++i) {
      samples.push_back(Time([&] {
        if (!elastic::PlanBinding(request, &plan, &err)) Die(err);
      }));
    }
    Report("PlanBinding again (restart, cached)", source, samples);
    std::printf("%s", elastic::PlanToTable(plan).c_str());
  }
  return 0;
}
