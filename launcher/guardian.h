// The guardian: elasticrun's original process, a small parent of the agent that
// kills what the agent leaves behind when the agent itself is SIGKILLed.
//
// Why: the agent is a child subreaper and kills every descendant at every exit it
// sees, but a SIGKILL (kill -9, the OOM killer) gives it no chance; PDEATHSIG then
// only covers the workers, not their children. So the first thing elasticrun does
// is fork: the child becomes the agent (the normal code path), the parent stays a
// guardian that
// - is PR_SET_CHILD_SUBREAPER: when the agent dies, its orphans come to it;
// - reads SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 (every signal
//   --signals-to-handle accepts) and SIGTSTP, SIGCONT (job control) from a
//   signalfd and forwards each to the agent; after SIGTSTP it stops itself;
// - waits for the agent's pidfd, then SIGKILLs every descendant left
//   (KillDescendants, with a deadline), reaps them and returns the agent's
//   status: its exit code, or 128+N when signal N killed it.
// The agent runs in its own process group, so a terminal's Ctrl-C (SIGINT to the
// foreground group) reaches only the guardian and the agent gets it once; it has
// PR_SET_PDEATHSIG(SIGTERM): when the guardian dies the agent stops as on SIGTERM.
//
// Contracts: call it first in main(), before any thread, any fd worth keeping
// and any output (stdio buffers would be written twice). No exception, no sleep.
// ELASTIC_NO_GUARDIAN=1 turns it off (debugging: the agent is then the only process).
#pragma once

namespace elastic {

// In the guardian, once the agent and every descendant are gone: returns true with
// *exit_status. In the agent (the child, or the only process when the guardian is
// off or fork failed): returns false; carry on as elasticrun.
bool RunGuardian(int* exit_status);

}  // namespace elastic
