#!/usr/bin/env python3
"""A tiny DDP job for elasticrun (and torchrun): gloo on CPU, a few steps of a
one-layer model, then an all_reduce of the ranks whose result the tests check.

    elasticrun --standalone --nproc-per-node=4 examples/train.py
    elasticrun --standalone --nproc-per-node=4 --max-restarts=1 examples/train.py --fail-once-rank=2

Options (or the environment variables in brackets):
  --steps N              training steps (default 5)
  --fail-once-rank K     rank K exits with code 1 on the first attempt
                         (TORCHELASTIC_RESTART_COUNT == 0) [TRAIN_FAIL_ONCE_RANK]
  --raise-rank K         rank K raises RuntimeError under @record, so the agent's
                         summary shows its traceback [TRAIN_RAISE_RANK]
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--fail-once-rank", type=int, default=int(os.environ.get("TRAIN_FAIL_ONCE_RANK", -1)))
    p.add_argument("--raise-rank", type=int, default=int(os.environ.get("TRAIN_RAISE_RANK", -1)))
    return p.parse_args()


@record
def main():
    args = parse_args()
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    if rank == args.fail_once_rank and restart == 0:
        print(f"rank {rank}: failing on purpose (attempt {restart})", flush=True)
        sys.exit(1)
    if rank == args.raise_rank:
        raise RuntimeError(f"rank {rank} raised on purpose")

    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(args.steps):
        x = torch.randn(16, 8)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    total = torch.tensor([float(rank)])
    dist.all_reduce(total)
    expected = world * (world - 1) / 2
    ok = total.item() == expected
    print(f"rank {rank}/{world} restart {restart}: all_reduce sum of ranks = {total.item():g} "
          f"(expected {expected:g}) {'OK' if ok else 'WRONG'}", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    if not ok:
        sys.exit(3)


if __name__ == "__main__":
    main()
