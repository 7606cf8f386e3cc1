#!/usr/bin/env python3
"""The randomized fault run's PyTorch worker (fault_run.py, torch=True): joins the
gloo group through the agent's store (init_process_group, env://) and trains: an
all_reduce of the ranks every 0.2 s, checked against the expected sum. It records,
like the shell worker, "start NODE ROUND GROUP_RANK GROUP_WORLD STORE PID TIME"
before anything else, then "reduced PID TIME" after its group's first all_reduce,
"wrong PID TIME SUM" on a wrong sum, and "stop PID TIME" when told to stop
(SIGTERM). A peer that dies makes the all_reduce fail: the worker exits 1, as a
real training process does, and its agent restarts the group.

The training runs in a thread: the main thread only waits, so that SIGTERM's
handler runs at once even while gloo blocks in an all_reduce (Python runs signal
handlers in the main thread, between bytecodes)."""
import datetime
import os
import signal
import sys
import threading
import time

env = os.environ
RECORDS = env["FAULT_RECORDS"]


def record(line):
    # One write of one line with O_APPEND: lines of concurrent workers never interleave.
    fd = os.open(RECORDS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def event(kind, *extra):
    record(" ".join([kind, str(os.getpid()), "%.6f" % time.time(), *extra]))


def on_term(signum, frame):
    event("stop")
    os._exit(0)


signal.signal(signal.SIGTERM, on_term)
record("start %s %s %s %s %s:%s %d %.6f" % (
    env["FAULT_NODE"], env["TORCHELASTIC_RESTART_COUNT"], env["GROUP_RANK"],
    env["GROUP_WORLD_SIZE"], env["MASTER_ADDR"], env["MASTER_PORT"], os.getpid(), time.time()))

import torch  # noqa: E402 (after the start line: the import is seconds without --preload)
import torch.distributed as dist  # noqa: E402

failed = []


def train():
    try:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
        rank, world = dist.get_rank(), dist.get_world_size()
        expected = world * (world - 1) / 2
        step = 0
        while True:
            total = torch.tensor([float(rank)])
            dist.all_reduce(total)
            if total.item() != expected:
                event("wrong", str(total.item()))
            elif step == 0:
                event("reduced")
            step += 1
            time.sleep(0.2)
    except Exception as e:  # a peer died or was cut off: the group ends here
        failed.append(e)


thread = threading.Thread(target=train, daemon=True)
thread.start()
while thread.is_alive():
    thread.join(0.2)
print("fault_worker: %s" % failed[0] if failed else "fault_worker: training ended", file=sys.stderr)
sys.exit(1)
