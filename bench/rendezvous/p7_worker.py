"""Benchmark worker for P7: records its start time before importing torch, then
trains (gloo all_reduce every 0.1 s) until its agent stops it."""
import os
import time

with open(os.path.join(os.environ["BENCH_DIR"], "start.%d" % os.getpid()), "w") as f:
    f.write(str(time.time_ns()))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

dist.init_process_group("gloo")
while True:
    dist.all_reduce(torch.ones(1))
    time.sleep(0.1)
