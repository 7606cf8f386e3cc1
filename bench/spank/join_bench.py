#!/usr/bin/python3
"""`srun --elastic-join` (issue 24) vs cancel-and-resubmit, on the 4-node test cluster.

    bench/spank/join_bench.py [--reps N] [--build DIR] [--torch]

Each repetition, one worker per node (--gpus-per-node=1), all timed from this
process's clock against the workers' READY lines as srun prints them:
  grow:   job A runs -N2 --elastic=2:4 on n1,n2; job B starts `srun -N2 --elastic-join=A`
          on n3,n4 -> A's and B's workers all READY in the 4-node group;
  shrink: `scancel B` -> A's workers READY again in the 2-node group;
  resubmit (the reference, what a user has today): `scancel A`, then a new
          `srun -N4 --elastic=4:4` of the same program -> its workers all READY
          (their first step).
The worker is bench/spank/join_worker.py: shell-free Python that imports nothing
heavy, so both sides pay only the launchers and Slurm. A real program's start-up
(`import torch`, loading data) adds to each restart of workers: to the reference's
fresh job, and also to grow and shrink, whose workers restart in the new group
(--elastic-preload=torch takes the import off those restarts). --torch runs
tests/spank/worker.py instead (imports torch, READY after init_process_group).
Prints a table and a markdown block for docs/benchmarks.md. Needs root (the test cluster).
"""
import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "cluster"))
sys.path.insert(0, str(ROOT / "tests" / "spank"))
from cluster import Cluster  # noqa: E402
from test_spank_e2e import Background, records  # noqa: E402

TIMEOUT = 300


def ready_at(bg, world, n, after):
    """When (monotonic) bg printed its n-th READY of a group of `world` after `after`, or None."""
    hits = [bg.start + t for t, line in list(bg.lines)
            if bg.start + t >= after and records(line, "READY") and records(line, "READY")[0]["world"] == str(world)]
    return hits[n - 1] if len(hits) >= n else None


def wait_ready(bg, world, n, after, what):
    if not bg.wait_for(lambda _: ready_at(bg, world, n, after) is not None, TIMEOUT):
        raise RuntimeError(f"{what}: no {n} workers READY in a world of {world} within {TIMEOUT} s:\n{bg.text()}")
    return ready_at(bg, world, n, after)


def job_ids(cluster):
    return cluster.run(["squeue", "-h", "-o", "%i"], timeout=30).stdout.split()


def wait_no_jobs(cluster):
    deadline = time.monotonic() + TIMEOUT
    while job_ids(cluster):
        if time.monotonic() > deadline:
            raise RuntimeError(f"jobs left on the cluster: {job_ids(cluster)}")
        time.sleep(0.2)


def one_rep(cluster, worker, work, conf):
    """conf: extra --elastic-rdzv-conf keys (k=v,...) for every job, or ''."""
    extra = [f"--elastic-rdzv-conf={conf}"] if conf else []
    a = Background(cluster, ["-N2", "-w", "n1,n2", "--no-kill", "--elastic=2:4", "--gpus-per-node=1",
                             "--elastic-max-restarts=3", *extra, *worker])
    b = c = None
    try:
        wait_ready(a, 2, 2, 0, "job A")
        (job_a,) = job_ids(cluster)
        t0 = time.monotonic()
        b = Background(cluster, ["-N2", "-w", "n3,n4", "--gpus-per-node=1", f"--elastic-join={job_a}",
                                 f"--elastic-rdzv-conf=state_dir={work}" + (f",{conf}" if conf else ""), *worker])
        grow = max(wait_ready(a, 4, 2, t0, "grow, job A"), wait_ready(b, 4, 2, t0, "grow, job B")) - t0
        (job_b,) = [j for j in job_ids(cluster) if j != job_a]
        t1 = time.monotonic()
        cluster.run(["scancel", job_b], timeout=30, check=True)
        shrink = wait_ready(a, 2, 2, t1, "shrink, job A") - t1
        b.finish(60)
        t2 = time.monotonic()
        cluster.run(["scancel", job_a], timeout=30, check=True)
        c = Background(cluster, ["-N4", "--elastic=4:4", "--gpus-per-node=1", *extra, *worker])
        resubmit = wait_ready(c, 4, 4, t2, "resubmit") - t2
        for job in job_ids(cluster):
            cluster.run(["scancel", job], timeout=30)
    finally:
        for bg in (a, b, c):
            if bg is not None:
                if bg.proc.poll() is None:
                    bg.finish(60)
    wait_no_jobs(cluster)
    return {"grow": grow, "shrink": shrink, "resubmit": resubmit}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--torch", action="store_true", help="tests/spank/worker.py (imports torch) as the worker")
    ap.add_argument("--rdzv-conf", default="", help="extra --elastic-rdzv-conf keys for every job (k=v,...)")
    a = ap.parse_args()
    build = Path(a.build).resolve()
    so = build / "spank_plugin" / "spank_elastic.so"
    elasticrun = build / "launcher" / "elasticrun"
    worker = (["/usr/bin/python3", str(ROOT / "tests" / "spank" / "worker.py"), "--seconds=600"] if a.torch
              else ["/usr/bin/python3", str(ROOT / "bench" / "spank" / "join_worker.py")])
    runs = []
    with Cluster(nodes=4, plugin=so, plugin_args=[f"launcher={elasticrun}"]) as cluster:
        # The nodes share this machine's /tmp, where the agents keep their regime
        # records: B's get a directory of their own, as on other machines.
        work = cluster.dir / "jobs" / "join-bench"
        work.mkdir(parents=True, exist_ok=True, mode=0o700)
        for rep in range(a.reps):
            runs.append(one_rep(cluster, worker, work, a.rdzv_conf))
            print(f"rep {rep} " + " ".join(f"{k}={v:.2f}s" for k, v in runs[-1].items()), flush=True)
    med = {k: statistics.median(r[k] for r in runs) for k in ("grow", "shrink", "resubmit")}
    def all_of(k):
        return ", ".join(f"{r[k]:.2f}" for r in runs)
    name = "tests/spank/worker.py (imports torch)" if a.torch else "bench/spank/join_worker.py (stdlib only)"
    conf = f", --elastic-rdzv-conf={a.rdzv_conf}" if a.rdzv_conf else ""
    print(f"\n4 nodes, 1 worker per node, {name}{conf}, median of {a.reps} runs\n")
    print("| measure | median | runs (s) | resubmit / this |")
    print("|---|---|---|---|")
    print(f"| grow: B's `srun -N2 --elastic-join=A` -> A's and B's workers in the 4-node group | "
          f"{med['grow']:.2f} s | {all_of('grow')} | {med['resubmit'] / med['grow']:.1f}x |")
    print(f"| shrink: `scancel B` -> A's workers in the 2-node group | {med['shrink']:.2f} s | "
          f"{all_of('shrink')} | {med['resubmit'] / med['shrink']:.1f}x |")
    print(f"| reference: `scancel A` + `srun -N4 --elastic=4:4` -> its workers in the group | "
          f"{med['resubmit']:.2f} s | {all_of('resubmit')} | 1.0x |")


if __name__ == "__main__":
    main()
