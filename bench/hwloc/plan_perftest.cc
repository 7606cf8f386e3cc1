// plan_perftest: what binding adds to elasticrun's launch latency. For each
// topology: the first CountGpus + PlanBinding in a fresh process (what every
// elasticrun start pays: load the topology, find GPUs, plan; measured inside a
// freshly exec'd process, startup excluded), a topology load
// alone, and a re-plan with the topology already loaded (worker restarts).
// Prints median / p90 / min of wall time and of CPU time over N runs; on a
// busy machine the CPU time is the stable figure (wall includes waiting for a CPU).
//
//   plan_perftest [--runs N] [--topology FILE]...   (default: topo.jrc0386.xml,
//   the largest file of tests/topologies, then this machine)
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

// Runs `plan_perftest --once FILE` (a fresh process that has loaded nothing)
// and returns the timing it measured around its first CountGpus+PlanBinding.
Sample TimeInFreshProcess(const std::string& file) {
  int fds[2];
  if (pipe(fds) != 0) Die("pipe failed");
  pid_t pid = fork();
  if (pid < 0) Die("fork failed");
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], STDOUT_FILENO);
    execl("/proc/self/exe", "plan_perftest", "--once", file.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  char text[128] = {};
  ssize_t n = read(fds[0], text, sizeof text - 1);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  Sample sample{};
  if (n <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      std::sscanf(text, "%lf %lf", &sample.wall_ms, &sample.cpu_ms) != 2) {
    Die("child failed");
  }
  return sample;
}

// What every elasticrun start pays: CountGpus (--nproc-per-node=gpu) then PlanBinding.
void FirstPlan(const std::string& file) {
  std::string err;
  elastic::BindingRequest request;
  request.topology_file = file;
  int gpus = 0;
  if (!elastic::CountGpus(request, &gpus, &err)) Die(err);
  request.nproc = std::max(gpus, 1);
  elastic::BindingPlan plan;
  if (!elastic::PlanBinding(request, &plan, &err)) Die(err);
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
  if (argc == 3 && std::strcmp(argv[1], "--once") == 0) {
    Sample sample = Time([&] { FirstPlan(argv[2]); });
    std::printf("%f %f\n", sample.wall_ms, sample.cpu_ms);
    return 0;
  }
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
    std::vector<Sample> samples;
    TimeInFreshProcess(file);
    for (int i = 0; i < runs; ++i) samples.push_back(TimeInFreshProcess(file));
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
