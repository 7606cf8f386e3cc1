#!/usr/bin/python3
"""A worker for the plugin's end-to-end tests: prints its torchrun contract,
does a real gloo all_reduce, then optionally keeps training (a barrier every
0.2 s) for --seconds, reporting the signals it gets.

LIGHT_TEST_WORKER=1 (the scenarios whose subject is Slurm, the plugin or the
rendezvous): no torch; the group, the all_reduce and the barriers go through the
agent's store (tests/light_group.py), with the same lines and options.

Lines (each flushed): START (before import torch), ENV ..., READY ..., SUM ..., SIGNAL ..., DONE ...
"""
import argparse
import os
import signal
import socket
import sys
import time


def say(*words):
    # One write(2), not print(): say() also runs in signal handlers, and a handler
    # that prints while the main code is inside print() raises "reentrant call"
    # (Python 3.13).
    os.write(1, (" ".join(str(w) for w in words) + "\n").encode())


# Before importing torch: when the launcher started this worker (benchmarks).
say("START", f"rank={os.environ.get('RANK')} restart={os.environ.get('TORCHELASTIC_RESTART_COUNT')}")

LIGHT = os.environ.get("LIGHT_TEST_WORKER") == "1"
if LIGHT:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from light_group import LightGroup  # noqa: E402
else:
    import torch  # noqa: E402
    import torch.distributed as dist  # noqa: E402


class GlooGroup:
    """torch.distributed's gloo group, as LightGroup's calls."""

    def __init__(self):
        dist.init_process_group("gloo")
        self.world = dist.get_world_size()
        self.tensors = []

    def all_reduce_sum(self, value):
        total = torch.tensor([float(value)])
        dist.all_reduce(total)
        # Kept until close(): a gloo work thread that ran this collective holds the tensor
        # until the group's end, and dropping the last reference there needs the GIL that
        # destroy_process_group() holds while it joins that thread (PyTorch 2.6: the worker
        # never exited, its step hung to srun's 300 s timeout; seen in the container tests).
        self.tensors.append(total)
        return int(total.item())

    def barrier(self):
        dist.barrier()

    def close(self):
        dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=0)
    p.add_argument("--later-seconds", type=float, default=None,
                   help="--seconds of the restarts after the first (default: --seconds): a first "
                        "round that lasts until the test changes the world, then a short one")
    p.add_argument("--fail-once-rank", type=int, default=-1)
    p.add_argument("--fail-always-rank", type=int, default=-1)
    p.add_argument("--fail-plan", default="",
                   help="R:K,...: in restart R rank K exits 1 before joining the group")
    p.add_argument("--crash-once-rank", type=int, default=-1,
                   help="rank K exits 1 after the first all_reduce of attempt 0 (benchmarks)")
    p.add_argument("--kill-agent-rank", type=int, default=-1,
                   help="rank K SIGKILLs its agent after the all_reduce (the node's agent is lost)")
    p.add_argument("--fail-on-file", default="",
                   help="PATH:K: in restart 0 the training runs until PATH exists (at most 120 s), "
                        "then rank K exits 1 (a failure at a moment the test chooses)")
    p.add_argument("--default-signals", action="store_true",
                   help="keep SIGTERM's default action, so a worker blocked in a collective dies at once")
    args = p.parse_args()
    e = os.environ
    rank = int(e["RANK"])
    restart = int(e.get("TORCHELASTIC_RESTART_COUNT", "0"))
    me = (f"rank={rank} local_rank={e['LOCAL_RANK']} world={e['WORLD_SIZE']} "
          f"local_world={e['LOCAL_WORLD_SIZE']} group_rank={e['GROUP_RANK']} "
          f"group_world={e['GROUP_WORLD_SIZE']} nodeid={e.get('SLURM_NODEID', '-')} "
          f"host={socket.gethostname()} cvd={e.get('CUDA_VISIBLE_DEVICES', '-')} restart={restart} "
          f"procid={e.get('SLURM_PROCID', '-')} localid={e.get('SLURM_LOCALID', '-')}")
    say("ENV", me)

    def on_signal(signum, frame):
        say("SIGNAL", signal.Signals(signum).name, f"rank={rank}")
        if signum == signal.SIGTERM:
            sys.exit(143)
    signal.signal(signal.SIGUSR1, on_signal)
    if not args.default_signals:
        signal.signal(signal.SIGTERM, on_signal)

    plan = {tuple(int(x) for x in item.split(":")) for item in args.fail_plan.split(",") if item}
    if (rank == args.fail_always_rank or (rank == args.fail_once_rank and restart == 0)
            or (restart, rank) in plan):
        say("FAILING", f"rank={rank} restart={restart}")
        sys.exit(1)
    group = LightGroup() if LIGHT else GlooGroup()
    world = group.world
    say("READY", f"rank={rank} world={world} restart={restart}")
    total = group.all_reduce_sum(rank)
    say("SUM", f"rank={rank} sum={total:g} expected={world * (world - 1) / 2:g}")
    if rank == args.kill_agent_rank:
        say("KILLING-AGENT", f"rank={rank} agent={os.getppid()} slurm_restart={e.get('SLURM_RESTART_COUNT', '0')}")
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(60)  # the guardian kills this worker with the agent's other processes
    if rank == args.crash_once_rank and restart == 0:
        say("FAILING", f"rank={rank} restart={restart}")
        os._exit(1)
    # The same number of barriers on every rank: a deadline of its own per rank
    # (they start up to seconds apart) paired one rank's last barrier with
    # another's loop barrier, and the extra one then failed once that rank left.
    if args.fail_on_file and restart == 0:
        path, fail_rank = args.fail_on_file.rsplit(":", 1)
        deadline = time.monotonic() + 120
        while not os.path.exists(path) and time.monotonic() < deadline:
            time.sleep(0.2)
            group.barrier()
        if rank == int(fail_rank):
            say("FAILING", f"rank={rank} restart={restart}")
            os._exit(1)
    seconds = args.seconds if restart == 0 or args.later_seconds is None else args.later_seconds
    for _ in range(int(seconds / 0.2)):
        time.sleep(0.2)
        group.barrier()
    group.barrier()
    say("DONE", f"rank={rank} world={world} restart={restart}")
    group.close()


if __name__ == "__main__":
    main()
