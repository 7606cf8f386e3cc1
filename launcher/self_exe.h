// Where elasticrun's own binary is, for the files installed beside it
// (share/slurm-elastic/python: the zygote, the no-libuv shim).
#pragma once

#include <string>

namespace elastic {

// Pure: the path of elasticrun's binary, given /proc/self/exe's target, argv[0]
// and the process id. Normally /proc/self/exe. Run through the agent bundle's
// loader (docs/containers.md) /proc/self/exe is ld-linux, and argv[0] is what
// the loader was given: /proc/self/fd/N/bin/elasticrun, a path through a
// descriptor of the bundle opened on the host. It is rewritten to
// /proc/PID/fd/N/... so that the workers (the image's python) can open the
// files beside it while the agent lives.
std::string SelfExePath(const std::string& proc_self_exe, const std::string& argv0, int pid);

// The bundle descriptor N of such an argv[0] ("/proc/self/fd/N/..."), or -1.
int BundleFdOfArgv0(const std::string& argv0);

// main() records argv[0]; AgentExePath() is SelfExePath() of this process.
void SetProgramArgv0(const std::string& argv0);
std::string AgentExePath();

}  // namespace elastic
