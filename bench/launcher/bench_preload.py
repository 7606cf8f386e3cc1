#!/usr/bin/python3
"""P9: warm restarts with --preload torch, in one run: elasticrun with and without
--preload against torchrun, same torch worker (bench_preload_worker.py: import
torch, init_process_group("gloo"), then rank 0 crashes once).

  launch  elasticrun start to all N workers in the process group
  restart rank 0's crash to all N restarted workers back in the process group
  CPU     user + system CPU seconds of the whole run: the launcher and every process
          it started (the workers of both rounds, the preloaded interpreter), each
          to its exit (getrusage RUSAGE_CHILDREN around the run)

Usage: bench/launcher/bench_preload.py [--elasticrun PATH] [--nproc N] [--reps R]
Prints a Markdown table of medians. torchrun runs as bench_launcher.py runs it
(1.13: --redirects=9:1 --tee=9:1, c10d rendezvous on a free port, its default
5 s monitor and --monitor_interval=0.1; 2.x: the default 0.1 s monitor). On
Debian 13: scripts/in-root.sh trixie env ELASTIC_TORCH_NO_LIBUV=1 bench/launcher/bench_preload.py
"""
import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import tempfile
import time

from bench_launcher import free_port, launcher_env, torch_version

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "bench_preload_worker.py")
PYTHON = "/usr/bin/python3"


def elasticrun_cmd(path, nproc, preload):
    cmd = [path, "--standalone", "--nproc-per-node=%d" % nproc, "--max-restarts=1", "--python", PYTHON]
    return cmd + (["--preload", "torch"] if preload else []) + [WORKER]


def torchrun_cmd(nproc, monitor):
    cmd = [PYTHON, "-m", "torch.distributed.run", "--redirects=9:1", "--tee=9:1", "--nnodes=1",
           "--rdzv_backend=c10d", "--rdzv_endpoint=127.0.0.1:%d" % free_port(),
           "--nproc_per_node=%d" % nproc, "--max_restarts=1"]
    if monitor is not None:
        cmd.append("--monitor_interval=%g" % monitor)
    return cmd + [WORKER]


def stamps(d, prefix):
    out = []
    for f in os.listdir(d):
        if f.startswith(prefix) and not f.endswith(".tmp"):
            with open(os.path.join(d, f)) as fh:
                out.append(int(fh.read()))
    return out


def run(cmd, nproc):
    """(launch s, restart s, why, CPU s) of one run; restart None (with why) when the
    launcher started every worker but could not restart them (torchrun 2.6:
    PyTorch #135712)."""
    d = tempfile.mkdtemp(prefix="bench-preload-")
    try:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.time_ns()
        proc = subprocess.run(cmd, env=launcher_env({"BENCH_DIR": d, "OMP_NUM_THREADS": "1"}),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=d, timeout=300)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        first, second = stamps(d, "ingroup.0."), stamps(d, "ingroup.1.")
        crashes = stamps(d, "crash")
        if len(first) == nproc and crashes and len(second) != nproc:
            # The workers' own exception, not torchrun's ChildFailedError wrapper around it.
            errors = [l.strip() for l in proc.stderr.decode().splitlines()
                      if re.match(r"\s*[\w.]+(Error|Exception): ", l) and "ChildFailedError" not in l]
            return (max(first) - t0) / 1e9, None, (errors[-1] if errors else "exit %d" % proc.returncode)[:160], cpu
        if proc.returncode != 0 or len(first) != nproc or len(second) != nproc:
            raise RuntimeError("run failed (exit %d, %d+%d in group): %s" % (
                proc.returncode, len(first), len(second), proc.stderr.decode()[-2000:]))
        return (max(first) - t0) / 1e9, (max(second) - crashes[0]) / 1e9, None, cpu
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--elasticrun", default=os.path.join(HERE, "../../build/launcher/elasticrun"))
    p.add_argument("--nproc", type=int, default=4)
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args()
    path, n = os.path.abspath(args.elasticrun), args.nproc
    version = torch_version()
    variants = [("elasticrun --preload torch", elasticrun_cmd(path, n, True)),
                ("elasticrun", elasticrun_cmd(path, n, False))]
    monitors = [("default 5 s monitor", None), ("--monitor_interval=0.1", 0.1)] if version == "1.13" else \
        [("default 0.1 s monitor", None)]
    variants += [("torchrun %s (%s)" % (version, label), torchrun_cmd(n, m)) for label, m in monitors]
    results = {name: [] for name, _ in variants}
    for _ in range(args.reps):  # interleaved: a load change hits every variant alike
        for name, cmd in variants:
            results[name].append(run(cmd, n))
    base = statistics.median(r[1] for r in results[variants[0][0]] if r[1] is not None)
    base_launch = statistics.median(r[0] for r in results[variants[0][0]])
    base_cpu = statistics.median(r[3] for r in results[variants[0][0]])
    print("| %d workers, torch %s | launch to all in the group | crash to all back in the group | "
          "restart vs --preload | CPU of the run (2 rounds) | CPU vs --preload |" % (n, version))
    print("|---|---|---|---|---|---|")
    failures = []
    for name, _ in variants:
        launch = statistics.median(r[0] for r in results[name])
        cpu = statistics.median(r[3] for r in results[name])
        cpu_cells = "%.2f s | %.2fx" % (cpu, cpu / base_cpu)
        restarts = [r[1] for r in results[name] if r[1] is not None]
        whys = sorted({r[2] for r in results[name] if r[1] is None})
        failures += ["%s: restart failed in %d of %d runs: %s" % (name, len(results[name]) - len(restarts),
                                                                  len(results[name]), w) for w in whys]
        if not restarts:
            print("| %s | %.3f s (%.2fx) | restart fails | - | %s |" % (name, launch, launch / base_launch, cpu_cells))
            continue
        restart = statistics.median(restarts)
        ratio = "1x" if restart == base else "%.1fx slower" % (restart / base)
        print("| %s | %.3f s (%.2fx) | %.3f s | %s | %s |" % (name, launch, launch / base_launch, restart, ratio,
                                                          cpu_cells))
    for f in failures:
        print("\n" + f)
    print("\nmedians of %d interleaved runs; %d cores; %s" % (
        args.reps, os.cpu_count(), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())))


if __name__ == "__main__":
    main()
