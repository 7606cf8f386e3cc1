#!/usr/bin/env python3
"""A worker that guards a step with PyTorch's own watchdog, unchanged from what
runs under torchrun with TORCHELASTIC_ENABLE_FILE_TIMER=1:
FileTimerClient(TORCHELASTIC_TIMER_FILE) + expires(after=...).

    timer_worker.py HANG_RANK HANG_ROUNDS

Rank HANG_RANK hangs in stuck_in_collective() while TORCHELASTIC_RESTART_COUNT <
HANG_ROUNDS (its 1 s timer expires); the other ranks wait to be stopped in those
rounds. In later rounds every rank takes a guarded step released in time and
exits 0.
"""
import os
import sys
import time

from torch.distributed.elastic.timer import FileTimerClient, configure, expires


def stuck_in_collective():
    with expires(after=1):
        time.sleep(600)  # a collective that never returns


def main():
    hang_rank, hang_rounds = int(sys.argv[1]), int(sys.argv[2])
    rank = int(os.environ["RANK"])
    restart = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    configure(FileTimerClient(os.environ["TORCHELASTIC_TIMER_FILE"]))
    print(f"rank {rank} restart {restart}: started", flush=True)
    if restart < hang_rounds:
        if rank == hang_rank:
            stuck_in_collective()
        time.sleep(600)  # stopped by the agent when the hung rank fails
    with expires(after=60):
        time.sleep(0.1)  # released in time: nothing happens
    print(f"rank {rank} restart {restart}: done", flush=True)


if __name__ == "__main__":
    main()
