#!/usr/bin/python3
"""The join benchmark's worker (stdlib only, no shell): prints the READY record of
tests/spank/worker.py as soon as the launcher started it in its group, then waits
for SIGTERM. It imports nothing heavy on purpose: the benchmark measures the
launchers and Slurm, not the program's start-up (see bench/spank/join_bench.py)."""
import os
import signal

e = os.environ
os.write(1, (f"READY rank={e['RANK']} world={e['WORLD_SIZE']} group_rank={e['GROUP_RANK']} "
             f"restart={e.get('TORCHELASTIC_RESTART_COUNT', '0')}\n").encode())
signal.signal(signal.SIGTERM, lambda signum, frame: os._exit(143))
while True:
    signal.pause()
