#!/usr/bin/env python3
"""A small DDP training (gloo on CPU) that survives restarts and new world sizes:
copy its checkpoint/resume/sharding pattern into your own script.

    elasticrun --standalone --nproc-per-node=4 --max-restarts=3 examples/checkpoint_train.py
    srun --elastic=2:4 --elastic-max-restarts=3 examples/checkpoint_train.py --checkpoint-dir=$HOME/ckpt

- Checkpoints every --checkpoint-every steps, atomically: rank 0 writes a
  temporary file in the same directory, fsyncs it and renames it over the last
  one, so a kill at any moment leaves the previous checkpoint whole.
- After a restart (TORCHELASTIC_RESTART_COUNT > 0, or a new job) every rank
  loads the last checkpoint and continues from its step: at most
  --checkpoint-every steps are done again.
- The data is sharded by step, not by rank: step S trains on the global batch
  of samples [S*B, (S+1)*B) (B = --global-batch), and rank R of W takes every
  W-th sample of it from R on. So the model sees the same data whatever the
  world size, and a restart with fewer or more workers continues the same run
  (B must be a multiple of every world size you run with).

Options:
  --steps N              steps in total (default 100)
  --checkpoint-every N   steps between checkpoints (default 10)
  --checkpoint-dir DIR   where checkpoint.pt goes [CHECKPOINT_DIR] (default ./checkpoints)
  --global-batch B       samples per step over all ranks (default 24)
  --step-time S          sleep S seconds per step (to watch it or kill it mid-run)
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel

FEATURES = 8


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--checkpoint-every", type=int, default=10)
    p.add_argument("--checkpoint-dir", default=os.environ.get("CHECKPOINT_DIR", "checkpoints"))
    p.add_argument("--global-batch", type=int, default=24)
    p.add_argument("--step-time", type=float, default=0.0)
    return p.parse_args()


def samples(indices):
    """Sample i of an endless deterministic dataset: features and a target."""
    i = indices.to(torch.float64).unsqueeze(1)
    x = torch.sin(i * torch.arange(1, FEATURES + 1, dtype=torch.float64) * 0.01).to(torch.float32)
    y = (x * torch.linspace(-1, 1, FEATURES)).sum(dim=1, keepdim=True)
    return x, y


def shard(step, global_batch, rank, world):
    """This rank's part of step `step`'s global batch."""
    if global_batch % world != 0:
        raise SystemExit(f"--global-batch {global_batch} is not a multiple of the world size {world}")
    start = step * global_batch
    return torch.arange(start + rank, start + global_batch, world)


def save_checkpoint(path, step, model, opt):
    """Atomically: a temporary file beside it, fsync, rename, fsync the directory."""
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        torch.save({"step": step, "model": model.module.state_dict(), "opt": opt.state_dict()}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    dirfd = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
    try:
        os.fsync(dirfd)
    finally:
        os.close(dirfd)


@record
def main():
    args = parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    torch.manual_seed(0)
    model = torch.nn.Linear(FEATURES, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.5)
    path = os.path.join(args.checkpoint_dir, "checkpoint.pt")
    step = 0
    if os.path.exists(path):
        ckpt = torch.load(path, map_location="cpu")
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["opt"])
        step = ckpt["step"]
    if rank == 0:
        os.makedirs(args.checkpoint_dir, exist_ok=True)
        print(f"world {world} restart {restart}: resuming at step {step}", flush=True)
    ddp = DistributedDataParallel(model)
    while step < args.steps:
        x, y = samples(shard(step, args.global_batch, rank, world))
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        opt.zero_grad()
        loss.backward()  # DDP averages the gradients: equal shards make it the global batch's
        opt.step()
        step += 1
        if rank == 0:
            print(f"step {step} loss {loss.item():.6f}", flush=True)
            if step % args.checkpoint_every == 0 or step == args.steps:
                save_checkpoint(path, step, ddp, opt)
                print(f"checkpoint at step {step}", flush=True)
        if args.step_time > 0:
            time.sleep(args.step_time)
    if rank == 0:
        weights = torch.cat([p.detach().flatten() for p in model.parameters()])
        print(f"done at step {step}: weights {' '.join(f'{w:.5f}' for w in weights.tolist())}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
