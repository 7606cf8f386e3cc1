#!/usr/bin/python3
"""srun --elastic vs `srun torchrun` on the 3-node test cluster, side by side.

    bench/spank/bench_spank.py [--reps N] [--nproc N] [--build DIR]

srun --elastic runs twice, with --elastic-preload=torch (workers forked from a
per-node zygote that imported torch once: issue 14) and without. All run the same worker (tests/spank/worker.py), N per node on 3 nodes, with
rank 1 crashing once right after the group formed (its first all_reduce), and
one restart allowed. From srun's merged output, timestamped as it arrives:
  start:   srun start -> every worker started (its first line, printed before
           `import torch`), and -> every worker in init_process_group's group (READY);
  restart: the failing worker's FAILING line -> every worker started again, and READY again.
torchrun is Debian's (1.13 on Debian 12, 2.6 on Debian 13: run it there with
scripts/in-root.sh trixie env ELASTIC_TORCH_NO_LIBUV=1 bench/spank/bench_spank.py) with the usual Slurm recipe (underscored flags,
--redirects=9:1 --tee=9:1 for Debian's Python 3.11, the first node's address
since node names do not resolve here, and is_host=1 on node 0 because 1.13's
host detection crashes on names that do not resolve). Prints a table and a markdown block
for docs/benchmarks.md. Needs root (the test cluster).
"""
import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "cluster"))
from cluster import Cluster  # noqa: E402

WORKER = str(ROOT / "tests" / "spank" / "worker.py")
FIRST_NODE_ADDR = "10.200.0.11"
# Rank 1 crashes right after the group formed on the first attempt; the others
# are then in collectives, where only SIGTERM's default action stops them promptly.
WORKER_ARGS = ["--crash-once-rank=1", "--default-signals", "--seconds=3"]


def cluster_hosts_file():
    path = "/tmp/slurm-elastic-bench-hosts"
    with open("/etc/hosts") as f:
        base = f.read()
    with open(path, "w") as f:
        f.write(base + "".join(f"10.200.0.{10 + i} n{i}\n" for i in (1, 2, 3)))
    return path


def timed_run(cluster, args, world, timeout=120):
    """Runs srun ARGS; returns the four durations (s) or raises with the output."""
    t0 = time.monotonic()
    proc = cluster.popen(["srun", *args], env={"GLOO_SOCKET_IFNAME": "eth0"}, stderr=subprocess.STDOUT)
    lines = []

    def read():
        for line in proc.stdout:
            lines.append((time.monotonic() - t0, line.rstrip("\n")))
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        rc = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        rc = "timeout"
    reader.join(10)
    text = "\n".join(f"{t:7.2f} {l}" for t, l in lines)

    def nth(kind, n, after=0.0):
        # torchrun's workers share one stdout, so two lines can arrive glued together.
        hits = [t for t, l in lines if t >= after for _ in range(l.count(f"{kind} rank="))]
        return hits[n - 1] if len(hits) >= n else None

    started = nth("START", world)
    ready = nth("READY", world)
    failed = nth("FAILING", 1)
    if None in (started, ready, failed):
        if rc == "timeout":  # hung (torchrun 2.6 after a failed restart, here)
            return {"start": None, "ready": None, "restart": None, "ready_again": None,
                    "why": f"hung: no full start within {timeout} s"}
        raise RuntimeError(f"run failed (rc {rc}):\n{text}")
    restarted = nth("START", world, after=failed)
    ready_again = nth("READY", world, after=failed)
    if rc != 0 or None in (restarted, ready_again):
        # The launcher could not restart (torchrun 2.6 here: PyTorch #135712):
        # the start is measured, the restart is reported as failed, with why.
        errors = [l for _, l in lines if "Error" in l and "Traceback" not in l]
        return {"start": started, "ready": ready, "restart": None, "ready_again": None,
                "why": (errors[-1].strip() if errors else f"rc {rc}")[:160]}
    return {"start": started, "ready": ready, "restart": restarted - failed,
            "ready_again": ready_again - failed}


def floor_run(cluster, nproc, world, timeout=120):
    """The floor no launcher can beat: plain srun of the same number of Python
    processes (one task per worker), each printing START as worker.py does.
    Returns srun start -> every START line (s)."""
    t0 = time.monotonic()
    code = "import os; print('START rank=' + os.environ['SLURM_PROCID'], flush=True)"
    r = cluster.run(["srun", "-N3", f"--ntasks-per-node={nproc}", "/usr/bin/python3", "-c", code],
                    timeout=timeout)
    elapsed = time.monotonic() - t0
    if r.returncode != 0 or r.stdout.count("START rank=") != world:
        raise RuntimeError(f"floor run failed (rc {r.returncode}):\n{r.stdout}\n{r.stderr}")
    return elapsed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--build", default=str(ROOT / "build"))
    a = ap.parse_args()
    build = Path(a.build).resolve()
    so = build / "spank_plugin" / "spank_elastic.so"
    elasticrun = build / "launcher" / "elasticrun"
    world = 3 * a.nproc
    elastic = ["-N3", "--elastic=3", f"--elastic-nproc-per-node={a.nproc}", "--elastic-max-restarts=1",
               "/usr/bin/python3", WORKER, *WORKER_ARGS]
    # torchrun's workers reach MASTER_ADDR by the agent's hostname, which does not
    # resolve in the test cluster: give torchrun's processes (only) an /etc/hosts
    # with the nodes, as on a cluster where node names resolve.
    hosts = Path(cluster_hosts_file())
    # Debian's torch 2.x has no libuv: torchrun's c10d store and its workers'
    # clients need elasticrun's shim, as elasticrun's workers do (docs/user.md).
    shim = ""
    if os.environ.get("ELASTIC_TORCH_NO_LIBUV") == "1":
        shim = f"PYTHONPATH={ROOT / 'launcher' / 'python'} "
    torchrun = ["-N3", "unshare", "--mount", "sh", "-c",
                f"mount --bind {hosts} /etc/hosts && exec env {shim}torchrun --nnodes=$SLURM_NNODES --nproc_per_node={a.nproc} --max_restarts=1 "
                f"--rdzv_backend=c10d --rdzv_endpoint={FIRST_NODE_ADDR}:29500 --rdzv_id=$SLURM_JOB_ID "
                # Node names do not resolve here, which crashes 1.13's host detection: say who hosts.
                f"--rdzv_conf=is_host=$([ $SLURM_NODEID = 0 ] && echo 1 || echo 0) "
                f"--redirects=9:1 --tee=9:1 {WORKER} {' '.join(WORKER_ARGS)}"]
    preload = ["-N3", "--elastic=3", "--elastic-preload=torch", *elastic[2:]]
    variants = (("srun --elastic --elastic-preload=torch", preload), ("srun --elastic", elastic),
                ("srun torchrun", torchrun))
    results = {name: [] for name, _ in variants}
    floors = []
    with Cluster(nodes=3, plugin=so, plugin_args=[f"launcher={elasticrun}"]) as cluster:
        for rep in range(a.reps):
            for name, args in variants:  # interleaved: a load change hits every variant alike
                r = timed_run(cluster, args, world)
                results[name].append(r)
                print(f"rep {rep} {name:38s} " + " ".join(
                    f"{k}={v:.2f}s" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()), flush=True)
            floors.append(floor_run(cluster, a.nproc, world))
            print(f"rep {rep} {'plain srun':38s} start={floors[-1]:.2f}s", flush=True)
    def median_of(runs, k):
        values = [r[k] for r in runs if r.get(k) is not None]
        return statistics.median(values) if values else None
    keys = ("start", "ready", "restart", "ready_again")
    med = {name: {k: median_of(runs, k) for k in keys} for name, runs in results.items()}
    failed_restarts = {name: [r["why"] for r in runs if r.get("restart") is None] for name, runs in results.items()}
    p, e, t = med["srun --elastic --elastic-preload=torch"], med["srun --elastic"], med["srun torchrun"]
    rows = [("srun start -> all workers started", "start"), ("srun start -> all workers in the group", "ready"),
            ("worker crash -> all workers started again", "restart"),
            ("worker crash -> all workers in the group again", "ready_again")]
    print(f"\n3 nodes x {a.nproc} workers, median of {a.reps} runs\n")
    version = subprocess.run(["/usr/bin/python3", "-c", "import torch; print(torch.__version__)"],
                             capture_output=True, text=True).stdout.strip().split("+")[0]
    print(f"| measure | srun --elastic --elastic-preload=torch | srun --elastic | srun torchrun ({version}) | "
          "preload vs without | preload vs torchrun | without vs torchrun |")
    print("|---|---|---|---|---|---|---|")
    def cell(name, v):
        if v is not None:
            return f"{v:.2f} s"
        return f"restart failed in {len(failed_restarts[name])} of {a.reps} runs"
    def ratio(slow, fast):
        return f"{slow / fast:.1f}x" if slow and fast else "-"
    for label, k in rows:
        print(f"| {label} | {cell('srun --elastic --elastic-preload=torch', p[k])} | {cell('srun --elastic', e[k])} | "
              f"{cell('srun torchrun', t[k])} | {ratio(e[k], p[k])} | {ratio(t[k], p[k])} | {ratio(t[k], e[k])} |")
    for name, whys in failed_restarts.items():
        for why in sorted(set(whys)):
            print(f"\n{name}: restart failed: {why}")
    floor = statistics.median(floors)
    print(f"\nFloor: plain `srun -N3 --ntasks-per-node={a.nproc}` of {world} Python processes printing START, "
          f"no launcher: {floor:.2f} s (runs {', '.join(f'{f:.2f}' for f in floors)}).")
    print(f"Above that floor: srun --elastic {e['start'] - floor:.2f} s, srun torchrun {t['start'] - floor:.2f} s "
          f"({(t['start'] - floor) / max(e['start'] - floor, 1e-3):.0f}x).")


if __name__ == "__main__":
    main()
