#!/usr/bin/env python3
"""The long randomized fault run (docs/benchmarks.md "Randomized fault run"; issue 19
item 20): the code of the CI's short run (tests/rendezvous/fault_run.py), with more
agents, longer, and the seed from the command line.
  fault_run.py ELASTICRUN SEED [AGENTS=5] [SECONDS=600] [-v]
Exit 0 when no violation was found (two groups training at once, a requeue while a
group trains, an agent exit no fault caused), 1 otherwise; the report names the seed
and the fault sequence, and keeps the agents' logs."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tests/rendezvous"))
from fault_run import FaultRun  # noqa: E402


def main(argv):
    args = [a for a in argv[1:] if a != "-v"]
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    run = FaultRun(int(args[1]), agents=int(args[2]) if len(args) > 2 else 5,
                   duration_s=float(args[3]) if len(args) > 3 else 600, elasticrun=args[0],
                   verbose="-v" in argv)
    run.run()
    print(run.report())
    run.cleanup()
    return 1 if run.violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
