// LocalRendezvous: the single-node rendezvous of --standalone (and of one-node
// runs without an endpoint). Every Join completes at once: this node is group
// rank 0 of a one-node world. Failures are counted here against
// --max-restarts: while restarts remain the agent's next Join starts the next
// round; after that ReportWorkerFailure answers with on_job_failed. Workers get MASTER_ADDR=127.0.0.1 and a free port picked per
// round (bind to port 0, then close; rank 0 binds it: torchrun's behaviour and
// its small race), TORCHELASTIC_USE_AGENT_STORE=False.
//
// Callbacks are never called from inside Join/Report*: they are posted on the
// loop (zero-delay timers), so the agent never re-enters itself.
#pragma once

#include <memory>

#include "common/event_loop.h"
#include "launcher/make_rendezvous.h"
#include "rendezvous/rendezvous_handler.h"

namespace elastic {

std::unique_ptr<RendezvousHandler> CreateLocalRendezvous(EventLoop& loop, const RendezvousOptions& options);

// A TCP port on 127.0.0.1 free right now (0 if none could be found).
int PickFreePort();

}  // namespace elastic
