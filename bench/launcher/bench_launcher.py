#!/usr/bin/python3
"""P1-P3: elasticrun against Debian's torchrun (1.13 on Debian 12, 2.6 on Debian 13),
side by side, same worker.

  P1  launch to all workers started (nproc 1 and 4)
  P2  agent peak RSS (VmHWM of the agent process once every worker started)
  P3  worker crash to all workers restarted (torchrun default monitor 5 s, and 0.1 s)

Usage: bench/launcher/bench_launcher.py [--elasticrun PATH] [--reps N] [--p3-reps N]
Prints a Markdown table (medians and ratios). Keep a run under ~5 minutes.
torchrun 1.13 runs as /usr/bin/python3 -m torch.distributed.run --redirects=9:1 --tee=9:1
(its default --redirects crashes on Debian's Python 3.11) with a c10d rendezvous on a free
port (its --standalone uses the fixed port 29400). Debian's torch 2.x has no libuv, so
torchrun's own c10d store fails there as our workers' store clients would: with
ELASTIC_TORCH_NO_LIBUV=1 torchrun gets elasticrun's shim (launcher/python) on PYTHONPATH,
as elasticrun's workers do. torchrun 2.x's default --monitor-interval is 0.1 s (1.13: 5 s).
Run it on Debian 13 with: scripts/in-root.sh trixie env ELASTIC_TORCH_NO_LIBUV=1 bench/launcher/bench_launcher.py
"""
import argparse
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "bench_worker.sh")
SHIM = os.path.join(HERE, "..", "..", "launcher", "python")


def torch_version():
    out = subprocess.run(["/usr/bin/python3", "-c", "import torch; print(torch.__version__)"],
                         capture_output=True, text=True).stdout.strip()
    return ".".join(out.split("+")[0].split(".")[:2]) or "?"


def launcher_env(extra):
    env = dict(os.environ, **extra)
    if env.get("ELASTIC_TORCH_NO_LIBUV") == "1":
        env["PYTHONPATH"] = SHIM + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def elasticrun_cmd(path, nproc, monitor):
    del monitor  # elasticrun does not poll
    return [path, "--standalone", "--nproc-per-node=%d" % nproc, "--max-restarts=1", "--no-python",
            "/bin/sh", WORKER]


def floor_cmd(nproc):
    """The floor no launcher beats: /bin/sh starting the same workers with the
    variables they read (RANK, LOCAL_WORLD_SIZE, ...) and waiting for them."""
    starts = " ".join(f"RANK={r} LOCAL_RANK={r} WORLD_SIZE={nproc} LOCAL_WORLD_SIZE={nproc} /bin/sh {WORKER} &"
                      for r in range(nproc))
    return ["/bin/sh", "-c", starts + " wait"]


def torchrun_cmd(nproc, monitor):
    cmd = ["/usr/bin/python3", "-m", "torch.distributed.run", "--redirects=9:1", "--tee=9:1",
           "--nnodes=1", "--rdzv_backend=c10d", "--rdzv_endpoint=127.0.0.1:%d" % free_port(),
           "--nproc_per_node=%d" % nproc, "--max_restarts=1", "--no_python"]
    if monitor is not None:
        cmd.append("--monitor_interval=%g" % monitor)
    return cmd + ["/bin/sh", WORKER]


def stamps(d, prefix):
    return [int(open(os.path.join(d, f)).read()) for f in os.listdir(d) if f.startswith(prefix)]


def wait_files(d, prefix, n, proc):
    while len([f for f in os.listdir(d) if f.startswith(prefix)]) < n:
        if proc.poll() is not None:
            raise RuntimeError("agent exited early: %s" % proc.returncode)
        time.sleep(0.002)
    time.sleep(0.01)  # let the last `date` finish writing


def vm_hwm_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def run_p1(cmd, nproc):
    """Returns (seconds from launch to the last worker start, agent peak RSS in MiB)."""
    d = tempfile.mkdtemp(prefix="bench-launcher-")
    env = launcher_env({"BENCH_DIR": d, "BENCH_MODE": "p1"})
    try:
        t0 = time.time_ns()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                cwd=d)
        wait_files(d, "start.0.", nproc, proc)
        rss = vm_hwm_kib(proc.pid) / 1024.0
        open(os.path.join(d, "release"), "w").close()
        proc.wait(timeout=120)
        return (max(stamps(d, "start.0.")) - t0) / 1e9, rss
    finally:
        shutil.rmtree(d, ignore_errors=True)


def run_p3(cmd, nproc):
    """Returns seconds from the crash of rank 0 to the last restarted worker's start."""
    d = tempfile.mkdtemp(prefix="bench-launcher-")
    env = launcher_env({"BENCH_DIR": d, "BENCH_MODE": "p3"})
    try:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                cwd=d)
        proc.wait(timeout=180)
        crash = int(open(os.path.join(d, "crash")).read())
        restarted = stamps(d, "start.1.")
        if len(restarted) != nproc:
            raise RuntimeError("only %d of %d workers restarted" % (len(restarted), nproc))
        return (max(restarted) - crash) / 1e9
    finally:
        shutil.rmtree(d, ignore_errors=True)


def median(values):
    return statistics.median(values)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--elasticrun", default=os.path.join(HERE, "../../build/launcher/elasticrun"))
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--p3-reps", type=int, default=3)
    p.add_argument("--p3-nproc", type=int, default=2)
    args = p.parse_args()
    args.elasticrun = os.path.abspath(args.elasticrun)
    rows = []
    floor_rows = []
    for nproc in (1, 4):
        ours = [run_p1(elasticrun_cmd(args.elasticrun, nproc, None), nproc) for _ in range(args.reps)]
        theirs = [run_p1(torchrun_cmd(nproc, 0.1), nproc) for _ in range(args.reps)]
        floors = [run_p1(floor_cmd(nproc), nproc) for _ in range(args.reps)]
        o, t = median([x[0] for x in ours]), median([x[0] for x in theirs])
        f = median([x[0] for x in floors])
        rows.append(("P1 launch to all %d worker(s) started" % nproc, "%.3f s" % o, "%.3f s" % t,
                     "%.0fx faster" % (t / o)))
        floor_rows.append("floor (/bin/sh starting the same %d worker(s)): %.3f s; above it: elasticrun "
                          "%.3f s, torchrun %.3f s (%.0fx)" % (nproc, f, o - f, t - f, (t - f) / max(o - f, 1e-4)))
        if nproc == 4:
            ro, rt = median([x[1] for x in ours]), median([x[1] for x in theirs])
            rows.append(("P2 agent peak RSS (4 workers)", "%.1f MiB" % ro, "%.1f MiB" % rt,
                         "1/%.0f" % (rt / ro)))
    n = args.p3_nproc
    ours = median([run_p3(elasticrun_cmd(args.elasticrun, n, None), n) for _ in range(args.p3_reps)])
    version = torch_version()
    monitors = (("default 5 s monitor", None), ("--monitor_interval=0.1", 0.1))
    if version != "1.13":
        monitors = (("default 0.1 s monitor", None),)
    for label, monitor in monitors:
        theirs = median([run_p3(torchrun_cmd(n, monitor), n) for _ in range(args.p3_reps)])
        rows.append(("P3 crash to %d workers restarted (torchrun %s)" % (n, label), "%.3f s" % ours,
                     "%.3f s" % theirs, "%.0fx faster" % (theirs / ours)))
    print("| measure | elasticrun | torchrun %s | ratio |" % version)
    print("|---|---|---|---|")
    for row in rows:
        print("| %s |" % " | ".join(row))
    print()
    for line in floor_rows:
        print(line)
    print("\nmedians of %d runs (P1, P2) and %d runs (P3); %s" %
          (args.reps, args.p3_reps, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())))


if __name__ == "__main__":
    main()
