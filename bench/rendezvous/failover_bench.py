#!/usr/bin/env python3
"""Failover time on loopback (docs/benchmarks.md "Failover"): 3 elasticrun
agents of 2 workers each; the host agent is SIGKILLed (a process death) or
SIGSTOPped (a silent host); measured from the loss to the last survivor's
worker of the next round started (each worker writes the wall-clock time of
its start before doing anything else, so Python's and torch's start-up are
not counted), with the rendezvous part (the new host's "round complete") too.
  failover_bench.py ELASTICRUN [RUNS] [kill|stop] [HEARTBEAT_TIMEOUT_S]"""
import glob
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

WORKER = ("echo $TORCHELASTIC_RESTART_COUNT $(date +%s.%N) > $BENCH_DIR/start.$$;"
          "[ $TORCHELASTIC_RESTART_COUNT = 0 ] && exec sleep 600; exit 0")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def agent_pid(guardian):
    """The agent: elasticrun's child with the same command line (its guardian's)."""
    own = open("/proc/%d/cmdline" % guardian, "rb").read()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open("/proc/%s/stat" % entry).read()
                if int(stat[stat.rindex(")") + 2:].split()[1]) == guardian and \
                        open("/proc/%s/cmdline" % entry, "rb").read() == own:
                    return int(entry)
            except OSError:
                pass
    return guardian


def starts(d, round_):
    out = []
    for path in glob.glob(os.path.join(d, "start.*")):
        try:
            r, t = open(path).read().split()
        except ValueError:
            continue
        if int(r) == round_:
            out.append(float(t))
    return out


def one_run(elasticrun, how, hb_timeout):
    d = tempfile.mkdtemp(prefix="failover-bench-")
    port = free_port()
    conf = "munge=0,expected_nodes=3,heartbeat_interval=%g,heartbeat_timeout=%g" % (
        min(2.0, hb_timeout / 6), hb_timeout)
    env = dict(os.environ, BENCH_DIR=d)
    procs, logs = [], []
    for rank in range(3):
        log = open(os.path.join(d, "agent%d.log" % rank), "wb")
        logs.append(log)
        procs.append(subprocess.Popen(
            [elasticrun, "--nnodes=2:3", "--nproc-per-node=2", "--rdzv-backend=c10d",
             "--rdzv-endpoint=127.0.0.1:%d" % port, "--rdzv-id=bench", "--max-restarts=3",
             "--node-rank=%d" % rank, "--rdzv-conf=" + conf, "--no-python", "sh", "-c", WORKER],
            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True))
        if rank == 0:
            time.sleep(0.3)
    deadline = time.time() + 60
    while len(starts(d, 0)) < 6 and time.time() < deadline:
        time.sleep(0.01)
    time.sleep(0.5)
    host = agent_pid(procs[0].pid)
    t0 = time.time()
    os.kill(host, signal.SIGKILL if how == "kill" else signal.SIGSTOP)
    while len(starts(d, 1)) < 4 and time.time() < deadline + 60:
        time.sleep(0.005)
    back = max(starts(d, 1)) - t0 if len(starts(d, 1)) >= 4 else float("nan")
    for p in procs[1:]:
        p.wait(60)
    if how == "stop":
        os.kill(host, signal.SIGKILL)
    os.killpg(procs[0].pid, signal.SIGKILL)
    procs[0].wait()
    ok = all(p.returncode == 0 for p in procs[1:])
    return back, ok


def main():
    elasticrun = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    how = sys.argv[3] if len(sys.argv) > 3 else "kill"
    hb = float(sys.argv[4]) if len(sys.argv) > 4 else 10.0
    times = []
    for _ in range(runs):
        back, ok = one_run(elasticrun, how, hb)
        print("%s: host lost -> survivors' 4 workers started again: %.3f s (survivors exit 0: %s)"
              % (how, back, ok), flush=True)
        times.append(back)
    times.sort()
    print("%s, heartbeat_timeout %g s: median %.3f s, min %.3f, max %.3f over %d runs"
          % (how, hb, times[len(times) // 2], times[0], times[-1], runs))


if __name__ == "__main__":
    main()
