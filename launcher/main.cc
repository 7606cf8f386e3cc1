// elasticrun: the per-node agent. Everything lives in the elastic_launcher library.
#include "common/log.h"
#include "launcher/guardian.h"
#include "launcher/run.h"

int main(int argc, char** argv) {
  elastic::SetLogProgram("elasticrun");
  // First of all, before PMIx, threads or output: the original process stays the
  // guardian, the child carries on as the agent (guardian.h).
  int exit_status = 0;
  if (elastic::RunGuardian(&exit_status)) return exit_status;
  return elastic::ElasticrunMain(argc, argv);
}
