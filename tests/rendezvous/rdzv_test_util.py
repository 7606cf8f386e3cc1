"""Helpers for the multi-agent rendezvous tests: start elasticrun agents on
loopback, wait for output lines, and make sure nothing of a test survives it
(every process started carries a marker in its environment)."""
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ELASTICRUN = os.environ.get("ELASTICRUN", os.path.join(HERE, "../../build/launcher/elasticrun"))
PYTHON = "/usr/bin/python3"
WORKER = os.path.join(HERE, "elastic_worker.py")
DEADLINE_S = 240  # a hung test fails; a slow, loaded machine does not

WORKER_LINE = re.compile(r"worker rank=(\d+) world=(\d+) round=(\d+) group_rank=(\d+) "
                         r"local_rank=(\d+) agent_store=(\S+) all_reduce=(\S+)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def marked_pids(marker):
    """Live processes whose environment carries `marker`."""
    pids = []
    needle = ("ELASTIC_RDZV_TEST_MARKER=" + marker).encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % entry, "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
            with open("/proc/%s/stat" % entry) as f:
                stat = f.read()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2:].split()[0] != "Z":
            pids.append(int(entry))
    return pids


def agent_under_guardian(guardian, default=None):
    """elasticrun's child with the same command line (the pid a launcher started is
    its guardian, launcher/guardian.h), or `default` when there is none (not started
    yet, gone, or ELASTIC_NO_GUARDIAN=1)."""
    def cmdline(pid):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                return f.read()
        except OSError:
            return None
    own = cmdline(guardian)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                stat = f.read()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2:].split()[1]) == guardian and cmdline(int(entry)) == own:
            return int(entry)
    return default


class Agent:
    def __init__(self, proc, log_path):
        self.proc = proc
        self.log_path = log_path

    def agent_pid(self):
        """The agent's own pid, to crash or freeze a node (agent_under_guardian)."""
        return agent_under_guardian(self.proc.pid, default=self.proc.pid)

    def output(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def workers(self):
        return [tuple(m.groups()) for m in WORKER_LINE.finditer(self.output())]


class RendezvousTestCase(unittest.TestCase):
    # Python workers are forked from a preloaded torch (--preload=torch, one
    # `import torch` per agent instead of one per worker and round): the torch
    # imports were most of the matrix's CPU time. TrainingTest keeps the plain
    # start (one interpreter per worker) across agents.
    preload_torch = True
    # Workers without torch (elastic_worker.py's LIGHT_TEST_WORKER: the ranks'
    # sum through the agent's store): the classes whose subject is the rendezvous's
    # membership under faults (label process), each file keeping real PyTorch workers
    # in a class of its own (label torch). An `import torch` is 1.5-3 CPU-s; these
    # classes started hundreds of them per system (issue 21).
    light_workers = False

    def worker_env(self):
        """What the agents' environment adds for this class's workers."""
        return {"LIGHT_TEST_WORKER": "1"} if self.light_workers else {}

    def worlds_by_round(self):
        """{round: {world sizes its workers saw}} over every agent of the test."""
        worlds = {}
        for agent in self.agents:
            for w in agent.workers():
                worlds.setdefault(w[2], set()).add(w[1])
        return worlds

    def preload_args(self, program):
        """--preload=torch for Python workers that import torch, as the agents' flag."""
        return (["--preload=torch"] if self.preload_torch and not self.light_workers
                and program.endswith(".py") else [])

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="elastic-rdzv-test-")
        self.marker = uuid.uuid4().hex
        self.port = free_port()
        self.run_id = "rdzv-test-" + self.marker[:8]
        self.agents = []

    def tearDown(self):
        for agent in self.agents:
            if agent.proc.poll() is None:
                os.killpg(agent.proc.pid, signal.SIGKILL)
        for pid in marked_pids(self.marker):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for agent in self.agents:
            agent.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def start_agent(self, nnodes, nproc=2, conf="", extra=(), env=None, program=WORKER,
                    worker_args=()):
        full_env = dict(os.environ)
        full_env.pop("OMP_NUM_THREADS", None)
        full_env["ELASTIC_RDZV_TEST_MARKER"] = self.marker
        full_env.update(self.worker_env())
        full_env.update(env or {})
        args = [ELASTICRUN, "--nnodes=%s" % nnodes, "--nproc-per-node=%d" % nproc,
                "--rdzv-backend=c10d", "--rdzv-endpoint=127.0.0.1:%d" % self.port,
                "--rdzv-id=" + self.run_id, "--python=" + PYTHON]
        if "munge" not in conf:
            # Deterministic auth whatever daemons run on this machine: tests that are
            # not about munge use a token or nothing (loopback).
            conf = ",".join(filter(None, ["munge=0", conf]))
        if "state_dir" not in conf:
            # Each test's regime records (rendezvous/regime_record.h) in its own directory.
            conf = ",".join(filter(None, ["state_dir=" + os.path.join(self.dir, "state"), conf]))
        args.append("--rdzv-conf=" + conf)
        if "--no-python" not in extra:
            args += self.preload_args(program)
        args += list(extra) + [program] + list(worker_args)
        return self.spawn(args, full_env)

    def spawn(self, args, env):
        """An agent process (in a session of its own), its output in the test's directory."""
        log = os.path.join(self.dir, "agent%d.log" % len(self.agents))
        with open(log, "wb") as out:
            proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env,
                                    start_new_session=True)
        agent = Agent(proc, log)
        self.agents.append(agent)
        return agent

    def stop_all(self):
        """SIGTERM to every agent still running; all exit and leave nothing behind."""
        for agent in self.agents:
            if agent.proc.poll() is None:
                os.kill(agent.proc.pid, signal.SIGTERM)
        for agent in self.agents:
            self.wait_exit(agent)
        self.assert_nothing_left()

    def wait_for(self, condition, what):
        end = time.monotonic() + DEADLINE_S
        while not condition():
            if time.monotonic() > end:
                self.fail("gave up waiting for %s\n%s" % (what, self.dump()))
            time.sleep(0.05)

    def wait_listening(self):
        def up():
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", self.port)) == 0
        self.wait_for(up, "the rendezvous host to listen")

    def wait_exit(self, agent):
        self.wait_for(lambda: agent.proc.poll() is not None, "agent %d to exit" % agent.proc.pid)
        return agent.proc.returncode

    def wait_workers(self, agent, round_, count):
        self.wait_for(lambda: len([w for w in agent.workers() if int(w[2]) == round_]) >= count,
                      "%d worker(s) of round %d on agent %d" % (count, round_, agent.proc.pid))

    def wait_first_round(self, agents, nproc):
        """The first round all `agents` trained together (`nproc` workers each, world
        len(agents) * nproc). Round 0, unless a node joined past a short last_call_timeout
        (a loaded machine, an ASan build): round 0 then closed without it and its join grew
        the job into round 1 (Debian 12 under ASan, the stop's CI of 2026-12-07)."""
        world = str(len(agents) * nproc)

        def together():
            counts = [{} for _ in agents]
            for count, agent in zip(counts, agents):
                for w in agent.workers():
                    if w[1] == world:
                        count[int(w[2])] = count.get(int(w[2]), 0) + 1
            common = [r for r in counts[0] if all(c.get(r, 0) >= nproc for c in counts)]
            return min(common) if common else None
        self.wait_for(lambda: together() is not None,
                      "a round of all %d agents' workers (world %s)" % (len(agents), world))
        return together()

    def assert_nothing_left(self):
        self.wait_for(lambda: not marked_pids(self.marker), "every process of the test to end")

    def dump(self):
        return "\n".join("--- agent %d (pid %d) ---\n%s" % (i, a.proc.pid, a.output())
                         for i, a in enumerate(self.agents))
