#!/usr/bin/env python3
"""Worker for the rendezvous tests: joins the gloo group through the agent
store, checks an all_reduce of the ranks, prints what it saw, then either ends
or, while TORCHELASTIC_RESTART_COUNT < HOLD_ROUNDS, keeps "training" until its
agent stops it (so a test can kill or add agents mid-training without timing).
FAIL_ONCE_RANK=K: rank K exits 1 at once in round 0 (an injected worker failure).
FAIL_PLAN="R:K,...": in round R rank K exits 1 at once (failures on chosen nodes); with
PRINTED_DIR, only once every rank of the round has printed its worker-env line (each
rank leaves a file there), so that no rank is stopped before it said what it saw.
IGNORE_TERM=1: SIGTERM is ignored (the agent's stop then takes its shutdown timeout).
LIGHT_TEST_WORKER=1: no torch (the tests whose subject is the rendezvous's
membership: label process); the group and the all_reduce of the ranks go through the
agent's store (tests/light_group.py): OK only if every rank of the round added its rank
to the same store."""
import os
import signal
import sys
import time

env = os.environ
LIGHT = env.get("LIGHT_TEST_WORKER") == "1"
if not LIGHT:
    import torch
    import torch.distributed as dist
rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
restart = int(env["TORCHELASTIC_RESTART_COUNT"])
hold_rounds = int(env.get("HOLD_ROUNDS", "0"))
if env.get("IGNORE_TERM") == "1":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
print(f"worker-env rank={rank} round={restart} max_restarts={env['TORCHELASTIC_MAX_RESTARTS']} "
      f"group_rank={env['GROUP_RANK']} world={world}", flush=True)
printed_dir = env.get("PRINTED_DIR")
if printed_dir:
    open(os.path.join(printed_dir, f"printed-{restart}-{rank}"), "w").close()
plan = {tuple(int(x) for x in item.split(":")) for item in env.get("FAIL_PLAN", "").split(",") if item}
if (restart, rank) in plan:
    deadline = time.monotonic() + 120
    while printed_dir and time.monotonic() < deadline and not all(
            os.path.exists(os.path.join(printed_dir, f"printed-{restart}-{r}")) for r in range(world)):
        time.sleep(0.05)
    print(f"worker rank={rank} failing on purpose in round {restart}", flush=True)
    sys.exit(1)
if restart == 0 and rank == int(env.get("FAIL_ONCE_RANK", "-1")):
    print(f"worker rank={rank} failing on purpose", flush=True)
    sys.exit(1)


if LIGHT:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from light_group import LightGroup  # noqa: E402
    group = LightGroup()
    ok = group.all_reduce_sum(rank) == world * (world - 1) // 2
else:
    dist.init_process_group("gloo")
    total = torch.tensor([float(rank)])
    dist.all_reduce(total)
    ok = total.item() == world * (world - 1) / 2
print(f"worker rank={rank} world={world} round={restart} group_rank={env['GROUP_RANK']} "
      f"local_rank={env['LOCAL_RANK']} agent_store={env['TORCHELASTIC_USE_AGENT_STORE']} "
      f"all_reduce={'OK' if ok else 'WRONG'}", flush=True)
if restart < hold_rounds:
    while True:  # held until the agent stops us (a restart, or the test)
        time.sleep(0.5)
if LIGHT:
    group.barrier()
    group.close()
else:
    dist.barrier()
    dist.destroy_process_group()
sys.exit(0 if ok else 3)
