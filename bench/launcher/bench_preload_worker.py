"""The worker of bench_preload.py: import torch, join the process group (gloo),
stamp DIR/ingroup.<restart>.<rank> (time.time_ns()). At restart 0, rank 0 stamps
DIR/crash and exits 1 once everyone is in; the others wait to be stopped.
At restart 1 everyone exits 0."""
import os
import time

import torch.distributed as dist

d = os.environ["BENCH_DIR"]
rank = int(os.environ["RANK"])
restart = os.environ["TORCHELASTIC_RESTART_COUNT"]


def stamp(name):
    with open(os.path.join(d, name + ".tmp"), "w") as f:
        f.write(str(time.time_ns()))
    os.rename(os.path.join(d, name + ".tmp"), os.path.join(d, name))


dist.init_process_group("gloo")
stamp("ingroup.%s.%d" % (restart, rank))
dist.barrier()
if restart == "0":
    if rank == 0:
        stamp("crash")
        os._exit(1)
    time.sleep(600)
dist.barrier()
