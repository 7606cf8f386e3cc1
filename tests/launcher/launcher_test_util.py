"""Helpers for elasticrun's real-process tests: run the agent, wait for files,
and check that no process of a run is left (by process group)."""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ELASTICRUN = os.environ.get("ELASTICRUN", os.path.join(HERE, "../../build/launcher/elasticrun"))
PYTHON = "/usr/bin/python3"  # Debian's python3 with torch
WORKER = os.path.join(HERE, "worker.py")
DEADLINE_S = 120  # generous: a hung test fails, a slow machine does not


def proc_stats():
    """(pid, state, ppid, pgrp) of every process in /proc, read once each."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        yield int(entry), fields[0], int(fields[1]), int(fields[2])


def live_members(pgid):
    """Pids of the non-zombie processes in process group `pgid`."""
    return [pid for pid, state, _, pgrp in proc_stats() if pgrp == pgid and state != "Z"]


def pids_running(argv):
    """Pids of the live processes whose command line is exactly `argv`."""
    want = ("\0".join(argv) + "\0").encode()
    found = []
    for pid, state, _, _ in proc_stats():
        if state in "ZX":
            continue
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                if f.read() == want:
                    found.append(pid)
        except OSError:
            continue
    return found


def children_of(pid):
    """Pids of the live children of `pid` (by /proc/PID/stat ppid)."""
    return [child for child, state, ppid, _ in proc_stats() if ppid == pid and state not in "ZX"]


def pid_alive(pid):
    """Whether `pid` is a process that has not exited (zombies count as gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def run_log_dir(base):
    """The directory of the one run under --log-dir BASE (RUNID_XXXXXX, as torchrun's)."""
    entries = [e for e in os.listdir(base) if os.path.isdir(os.path.join(base, e))]
    assert len(entries) == 1, "one run's directory expected in %s: %s" % (base, entries)
    return os.path.join(base, entries[0])


def wait_for(test, condition, what, within=DEADLINE_S):
    end = time.monotonic() + within
    while not condition():
        if time.monotonic() > end:
            test.fail("gave up waiting for " + what)
        time.sleep(0.02)


class LauncherTestCase(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="elastic-launcher-test-")
        self.groups = []  # process groups of the run: checked empty at the end
        self.markers = []  # command lines of escaped processes: killed at the end

    def tearDown(self):
        for argv in self.markers:
            for pid in pids_running(argv):
                os.kill(pid, signal.SIGKILL)
        for pgid in self.groups:
            for pid in live_members(pgid):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def start(self, args, env=None, **kw):
        full_env = dict(os.environ)
        full_env.pop("OMP_NUM_THREADS", None)
        full_env.update(env or {})
        proc = subprocess.Popen([ELASTICRUN] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=full_env, start_new_session=True, **kw)
        self.groups.append(proc.pid)
        return proc

    def start_two_nodes(self, run_id, tail, env=None, host_args=()):
        # Two agents on loopback, node 0 hosting the rendezvous (and the store) with
        # heartbeat_timeout=3: a host whose loop stalls is declared lost within 3 s.
        # host_args go to node 0 only; tail (program and its arguments) to both.
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        procs = []
        for node in range(2):
            conf = "munge=0,expected_nodes=2,heartbeat_timeout=3,is_host=%d" % (node == 0)
            procs.append(self.start(["--nnodes=2", "--nproc-per-node=1", "--rdzv-backend=c10d",
                                     "--rdzv-endpoint=127.0.0.1:%d" % port,
                                     "--rdzv-id=%s-%d" % (run_id, os.getpid()), "--rdzv-conf=" + conf]
                                    + (list(host_args) if node == 0 else []) + list(tail), env))
        return procs

    def run_agent(self, args, env=None, **kw):
        proc = self.start(args, env, **kw)
        out, err = proc.communicate(timeout=DEADLINE_S)
        return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")

    def worker_args(self, *args):
        return [PYTHON, WORKER] + [str(a) for a in args]

    def wait_ready(self, n):
        for rank in range(n):
            wait_for(self, lambda: os.path.exists(self.path("ready.%d" % rank)), "worker %d ready" % rank)
        for rank in range(n):
            with open(self.path("pids.%d" % rank)) as f:
                self.groups.append(json.load(f)["pgid"])

    def marker(self, tag):
        """A `sleep` command line unique to this test and `tag`, found again by pids_running."""
        argv = ["sleep", "930.%d%02d" % (os.getpid(), len(self.markers))]  # outlives DEADLINE_S
        self.markers.append(argv)
        return argv

    def assert_gone(self, argv, within=DEADLINE_S):
        wait_for(self, lambda: not pids_running(argv), "no '%s' left" % " ".join(argv), within)

    def assert_nothing_left(self):
        for pgid in self.groups:
            wait_for(self, lambda: not live_members(pgid), "process group %d to be empty" % pgid)
