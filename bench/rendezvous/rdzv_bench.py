#!/usr/bin/python3
"""Rendezvous benchmarks P5, P6, P7: elasticrun and Debian's torchrun 1.13 (c10d)
side by side in one run, on loopback.

  P5  N agents (1 worker each): launch -> every worker started.  N = 2, 4, 8, 16
  P6  --nnodes=2:4 with 3 agents (elasticrun: expected_nodes=3): launch -> 3 workers started
  P7  3 agents --nnodes=2:3, gloo workers training: SIGKILL one agent -> both
      survivors' workers restarted; again as a node loss (the agent and its workers
      killed at once: torchrun's workers outlive a killed agent)

Usage: bench/rendezvous/rdzv_bench.py --elasticrun BUILD/launcher/elasticrun [--only p5,p6,p7]
       [--sizes 2,4,8,16] [--no-torchrun]
"""
import argparse
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "mark_start.sh")
P7_WORKER = os.path.join(HERE, "p7_worker.py")
PYTHON = "/usr/bin/python3"
TORCHRUN = "/usr/bin/torchrun"
CAP_S = 120


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Run:
    """One benchmark run: agents started in their own sessions, all killed at the end."""

    def __init__(self, impl, args):
        self.impl, self.args = impl, args
        self.dir = tempfile.mkdtemp(prefix="rdzv-bench-")
        self.port = free_port()
        self.marker = uuid.uuid4().hex
        self.procs = []

    def agent_cmd(self, nnodes, program, conf=None, max_restarts=0, python=False):
        if self.impl == "elasticrun":
            cmd = [self.args.elasticrun, "--nnodes=%s" % nnodes, "--nproc-per-node=1",
                   "--rdzv-backend=c10d", "--rdzv-endpoint=127.0.0.1:%d" % self.port,
                   "--rdzv-id=bench", "--max-restarts=%d" % max_restarts]
            if conf:
                cmd.append("--rdzv-conf=" + conf)
            cmd += ["--python=" + PYTHON] if python else ["--no-python"]
        else:
            cmd = [TORCHRUN, "--nnodes=%s" % nnodes, "--nproc_per_node=1", "--rdzv_backend=c10d",
                   "--rdzv_endpoint=127.0.0.1:%d" % self.port, "--rdzv_id=bench",
                   "--max_restarts=%d" % max_restarts, "--redirects=9:1", "--tee=9:1",
                   "--log_dir=" + os.path.join(self.dir, "logs%d" % len(self.procs))]
            cmd += [] if python else ["--no_python"]
        return cmd + [program]

    def start(self, cmd):
        env = dict(os.environ, BENCH_DIR=self.dir, RDZV_BENCH_MARKER=self.marker)
        env.pop("OMP_NUM_THREADS", None)
        log = open(os.path.join(self.dir, "agent%d.log" % len(self.procs)), "wb")
        self.procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                           start_new_session=True))
        log.close()
        return self.procs[-1]

    def stamps(self):
        out = []
        for path in glob.glob(os.path.join(self.dir, "start.*")):
            try:
                with open(path) as f:
                    out.append(int(f.read().strip()))
            except (OSError, ValueError):
                pass
        return sorted(out)

    def wait_stamps(self, count, after_ns=0, cap_s=CAP_S):
        end = time.monotonic() + cap_s
        while time.monotonic() < end:
            new = [t for t in self.stamps() if t > after_ns]
            if len(new) >= count:
                return new[count - 1]
            time.sleep(0.01)
        return None

    def wait_listening(self):
        end = time.monotonic() + CAP_S
        while time.monotonic() < end:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.01)

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        needle = ("RDZV_BENCH_MARKER=" + self.marker).encode()
        for entry in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open("/proc/%s/environ" % entry, "rb") as f:
                    if needle in f.read().split(b"\0"):
                        os.kill(int(entry), signal.SIGKILL)
            except OSError:
                pass
        for p in self.procs:
            p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def seconds(ns):
    return None if ns is None else ns / 1e9


def p5(impl, args, n):
    run = Run(impl, args)
    try:
        t0 = time.time_ns()
        for _ in range(n):
            run.start(run.agent_cmd(n, MARK))
        return seconds(None if (t := run.wait_stamps(n)) is None else t - t0)
    finally:
        run.close()


def p6(impl, args):
    run = Run(impl, args)
    try:
        conf = "expected_nodes=3" if impl == "elasticrun" else None
        t0 = time.time_ns()
        for _ in range(3):
            run.start(run.agent_cmd("2:4", MARK, conf=conf))
        return seconds(None if (t := run.wait_stamps(3)) is None else t - t0)
    finally:
        run.close()


def descendants(pid):
    """`pid` and every process below it (from /proc's parent links)."""
    children = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/stat" % entry) as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def p7(impl, args, node_loss=False):
    """SIGKILL one agent (node_loss: the agent and all its workers at once)."""
    run = Run(impl, args)
    try:
        cmd = run.agent_cmd("2:3", P7_WORKER, max_restarts=3, python=True)
        host = run.start(cmd)
        run.wait_listening()
        victim = [run.start(cmd) for _ in range(2)][-1]
        if run.wait_stamps(3) is None:
            return None
        time.sleep(3)  # let the workers get into training (all_reduce loop)
        victims = descendants(victim.pid) if node_loss else [victim.pid]
        t_kill = time.time_ns()
        for pid in victims:
            os.kill(pid, signal.SIGKILL)
        t = run.wait_stamps(2, after_ns=t_kill, cap_s=CAP_S)
        del host
        return seconds(None if t is None else t - t_kill)
    finally:
        run.close()


def fmt(x):
    return "n/a (> %d s cap)" % CAP_S if x is None else "%.2f s" % x


def ratio(ours, theirs):
    if ours is None:
        return "n/a"
    if theirs is None:
        return "> %.0fx" % (CAP_S / ours)
    return "%.1fx" % (theirs / ours)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--elasticrun", required=True)
    ap.add_argument("--only", default="p5,p6,p7")
    ap.add_argument("--sizes", default="2,4,8,16")
    ap.add_argument("--no-torchrun", action="store_true")
    args = ap.parse_args()
    impls = ["elasticrun"] + ([] if args.no_torchrun else ["torchrun"])
    rows = []
    only = args.only.split(",")
    if "p5" in only:
        for n in [int(x) for x in args.sizes.split(",")]:
            r = {impl: p5(impl, args, n) for impl in impls}
            rows.append(("P5 N=%d agents -> all workers started" % n, r))
            print(rows[-1], file=sys.stderr, flush=True)
    if "p6" in only:
        rows.append(("P6 2:4, 3 agents -> workers started", {impl: p6(impl, args) for impl in impls}))
        print(rows[-1], file=sys.stderr, flush=True)
    if "p7" in only:
        rows.append(("P7 SIGKILL one agent -> survivors' workers restarted",
                     {impl: p7(impl, args) for impl in impls}))
        print(rows[-1], file=sys.stderr, flush=True)
        rows.append(("P7 node loss (SIGKILL agent + its workers) -> survivors' workers restarted",
                     {impl: p7(impl, args, node_loss=True) for impl in impls}))
        print(rows[-1], file=sys.stderr, flush=True)
    print("| benchmark | elasticrun | torchrun 1.13 | ratio |")
    print("|---|---|---|---|")
    for name, r in rows:
        ours, theirs = r.get("elasticrun"), r.get("torchrun")
        print("| %s | %s | %s | %s |" % (name, fmt(ours), fmt(theirs) if "torchrun" in r else "-",
                                         ratio(ours, theirs) if "torchrun" in r else "-"))


if __name__ == "__main__":
    main()
