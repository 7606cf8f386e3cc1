// `elasticrun status [--json] [RENDEZVOUS OPTIONS]` (docs/user.md "Job status"):
// asks a running job's rendezvous host for its view (job_status.h) as an
// authenticated observer and prints it. The rendezvous options are the job's
// own (--rdzv-endpoint, --rdzv-id, --rdzv-conf and the token, PET_ forms
// included), read by the one option table (launch_options.cc).
#pragma once

#include <string>
#include <vector>

#include "launcher/launch_config.h"

namespace elastic {

// argv: the whole command line ("elasticrun", "status", ...). Returns the exit
// code: 0 printed, 1 no answer (not running, refused), 2 bad usage.
int StatusMain(const std::vector<std::string>& argv, const EnvMap& env);

}  // namespace elastic
