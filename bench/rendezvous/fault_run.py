#!/usr/bin/env python3
"""The long randomized fault runs (docs/benchmarks.md "Randomized fault run"; issue 19):
the code of the CI's short runs (tests/rendezvous/fault_run.py), longer, the seed
from the command line.
  fault_run.py ELASTICRUN SEED [AGENTS=5] [SECONDS=600] [--netns] [--torch] [--preload] [-v]
--netns: each agent in a network namespace of its own, with cuts of one or two agents
(root); --torch: PyTorch workers (gloo all_reduce; faults every 4-8 s instead of
1.5-4 s); --preload: those workers forked from `--preload torch`.
Exit 0 when no violation was found (two groups training at once, a minority training
alone, a wrong all_reduce, a requeue while a group trains, an agent exit no fault
caused), 1 otherwise; the report names the seed and the fault sequence, and keeps the
agents' logs."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tests/rendezvous"))
from fault_run import FaultRun  # noqa: E402

FLAGS = ("-v", "--netns", "--torch", "--preload")


def main(argv):
    args = [a for a in argv[1:] if a not in FLAGS]
    unknown = [a for a in args if a.startswith("-")]
    if len(args) < 2 or unknown:
        print(__doc__, file=sys.stderr)
        return 2
    torch = "--torch" in argv
    run = FaultRun(int(args[1]), agents=int(args[2]) if len(args) > 2 else 5,
                   duration_s=float(args[3]) if len(args) > 3 else 600, elasticrun=args[0],
                   verbose="-v" in argv, netns="--netns" in argv, torch=torch,
                   preload="--preload" in argv, fault_every=(4.0, 8.0) if torch else (1.5, 4.0))
    run.run()
    print(run.report())
    run.cleanup()
    return 1 if run.violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
