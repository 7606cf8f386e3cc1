"""A randomized fault run (issue 19, items 14-17 and the end of item 20): real
elasticrun agents (c10d rendezvous, `--nnodes=MIN:N` with MIN 2 so the majority
rule matters, one regime-record directory per node, as on real nodes), faults drawn
from a seeded RNG:

  kill_worker   SIGKILL one running worker (a worker failure: a restart)
  kill_agent    SIGKILL one agent (a node crash); it is started again later with its
                own command line, namespace included (what docs/user.md prescribes
                to bring a node back)
  stop_agent    SIGSTOP one agent (a frozen node), SIGCONT later
  cut           (netns=True) cut one agent's network off (fault_net.py: its link on
                another bridge), healed later; two cut at once share a side or not

Agent faults target the current rendezvous host (read from the agents' own lines)
about half the time. Up to two agents are impaired (down, frozen or cut off) at
once, by two faults drawn at the same instant (e.g. the host killed and another
node cut off, two agents killed) or by a second fault while the first lasts: the
three others are always a strict majority of any round (of at most 5 nodes), and
every fault ends well within join_timeout. So every agent exit other than a SIGKILL
of ours and the final SIGTERM is one no fault caused.

Workers: a shell command (light), or with torch=True a PyTorch worker (fault_worker.py:
gloo init_process_group through the agent's store, an all_reduce loop), optionally
forked from a preloaded interpreter (preload=True, `--preload torch`). Each worker
appends "start NODE ROUND GROUP_RANK GROUP_WORLD STORE PID TIME" to a shared file, and
"stop PID TIME" when told to stop; the driver watches each worker's pid (every 20 ms)
for the time it is gone otherwise. The checker (fault_check.py) fails on two groups
training at once, a group of cut-off nodes only (a minority trained alone), a wrong
all_reduce, a requeue while a group trains, and an agent exit no fault caused.

Used by tests/rendezvous/test_fault_run.py (short runs, fixed seeds, CI) and by
bench/rendezvous/fault_run.py (long ones, seeds from argv)."""
import os
import random
import shutil
import signal
import subprocess
import tempfile
import time
import uuid

import fault_check
from fault_net import Namespaces
from rdzv_test_util import PYTHON, agent_under_guardian

HERE = os.path.dirname(os.path.abspath(__file__))
ELASTICRUN = os.environ.get("ELASTICRUN", os.path.join(HERE, "../../build/launcher/elasticrun"))
TORCH_WORKER = os.path.join(HERE, "fault_worker.py")

# A worker's end: its own "stop" line when it is told to stop (SIGTERM, the usual way);
# the time the driver SIGKILLed it; else when the driver's polling found it gone.
SHELL_WORKER = ('echo "start $FAULT_NODE $TORCHELASTIC_RESTART_COUNT $GROUP_RANK $GROUP_WORLD_SIZE '
                '$MASTER_ADDR:$MASTER_PORT $$ $(date +%s.%N)" >> "$FAULT_RECORDS"; '
                'trap \'echo "stop $$ $(date +%s.%N)" >> "$FAULT_RECORDS"; exit 0\' TERM; '
                'sleep 100000 & wait')
AGENT_FAULTS = ("kill_agent", "stop_agent")
# The lines by which an agent says it became, or stopped being, the rendezvous host.
HOST_LINES = (("rendezvous: hosting:", True), ("taking over as the host", True),
              ("this node stops hosting", False))


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


class Node:
    def __init__(self, index):
        self.index = index
        self.proc = None
        self.log = None
        self.log_at = 0
        self.starts = 0
        self.down_until = None     # killed: started again at this time
        self.stopped_until = None  # SIGSTOPped: SIGCONT at this time
        self.stopped_pid = None
        self.cut_until = None      # cut off: healed at this time
        self.cuts = []             # [start, end] (epoch) of each cut, for the checker

    def impaired(self):
        return (self.down_until is not None or self.stopped_until is not None
                or self.cut_until is not None)


class FaultRun:
    def __init__(self, seed, agents=5, duration_s=60, fault_every=(1.5, 4.0), workdir=None,
                 elasticrun=ELASTICRUN, heartbeat_timeout=3, verbose=False, min_nodes=2,
                 netns=False, torch=False, preload=False, max_impaired=2, last_call_timeout=1,
                 failover_successors=None):
        self.rng = random.Random(seed)
        self.seed = seed
        self.count = agents
        self.duration_s = duration_s
        self.fault_every = fault_every
        self.elasticrun = elasticrun
        self.heartbeat_timeout = heartbeat_timeout
        self.verbose = verbose
        self.min_nodes = min_nodes
        self.last_call_timeout = last_call_timeout
        self.failover_successors = failover_successors
        self.torch = torch
        self.preload = preload
        # Impaired agents never reach half of a round: the others go on.
        self.max_impaired = min(max_impaired, (agents - 1) // 2)
        self.own_dir = workdir is None
        self.dir = workdir or tempfile.mkdtemp(prefix="elastic-fault-run-")
        self.records = os.path.join(self.dir, "records")
        self.scontrol_log = os.path.join(self.dir, "scontrol.log")
        self.net = Namespaces("efr" + uuid.uuid4().hex[:6], agents) if netns else None
        self.port = fault_check.free_port() if not netns else 29400
        self.run_id = "fault-run-%d" % seed
        self.nodes = [Node(i) for i in range(agents)]
        self.events = []      # (time, text): the fault sequence, for the report
        self.faults = []      # dict(kind, node, host, concurrent) per fault injected
        self.violations = []
        self.workers = {}     # pid -> dict(node, round, group_rank, world, store, start, end, gone)
        self.past = []        # workers whose pid a later one got
        self.marks = {}       # pid -> {"reduced": time} / {"wrong": ...} (torch workers)
        self.host = None      # the node that said last that it hosts
        self.read_at = 0
        self.t0 = None
        bindir = os.path.join(self.dir, "bin")
        os.makedirs(bindir, exist_ok=True)
        with open(os.path.join(bindir, "scontrol"), "w") as f:
            f.write('#!/bin/sh\necho "$(date +%%s.%%N) $*" >> "%s"\n' % self.scontrol_log)
        os.chmod(os.path.join(bindir, "scontrol"), 0o755)
        self.env = dict(os.environ)
        self.env.pop("OMP_NUM_THREADS", None)
        self.env.update({"PATH": bindir + ":" + os.environ["PATH"], "FAULT_RECORDS": self.records,
                         "SLURM_JOB_ID": "77", "ENVIRONMENT": "BATCH",
                         "PET_SLURM_COMMENT_INTERVAL": "0"})  # the fake scontrol's log is for requeues
        if torch:
            # Debian's torch 2.x has no libuv (docs/user.md); the shim is harmless elsewhere.
            self.env.update({"ELASTIC_TORCH_NO_LIBUV": "1", "OMP_NUM_THREADS": "1"})

    # -- agents --
    def endpoint(self):
        return "%s:%d" % (self.net.addr(0) if self.net else "127.0.0.1", self.port)

    def argv(self, node):
        conf = ",".join(["munge=0", "state_dir=" + os.path.join(self.dir, "state%d" % node.index),
                         "heartbeat_interval=1", "heartbeat_timeout=%d" % self.heartbeat_timeout,
                         "last_call_timeout=%g" % self.last_call_timeout, "join_timeout=60"]
                        + (["failover_successors=%d" % self.failover_successors]
                           if self.failover_successors else []))
        if self.torch:
            program = ["--python=" + PYTHON] + (["--preload=torch"] if self.preload else []) + [TORCH_WORKER]
        else:
            program = ["--no-python", "/bin/sh", "-c", SHELL_WORKER]
        prefix = self.net.enter(node.index) if self.net else []
        return prefix + [self.elasticrun, "--nnodes=%d:%d" % (self.min_nodes, self.count),
                         "--nproc-per-node=1", "--rdzv-backend=c10d",
                         "--rdzv-endpoint=" + self.endpoint(), "--rdzv-id=" + self.run_id,
                         "--rdzv-conf=" + conf, "--node-rank=%d" % node.index,
                         "--max-restarts=1000000", "--crash-loop-count=0", "--requeue=1",
                         "--shutdown-timeout=2"] + program

    def start(self, node):
        node.starts += 1
        node.log = os.path.join(self.dir, "agent%d.%d.log" % (node.index, node.starts))
        node.log_at = 0
        env = dict(self.env, FAULT_NODE=str(node.index), **(self.net.env(node.index) if self.net else {}))
        with open(node.log, "wb") as out:
            node.proc = subprocess.Popen(self.argv(node), stdout=out, stderr=subprocess.STDOUT,
                                         env=env, start_new_session=True)
        node.down_until = None

    def note(self, text):
        t = time.monotonic() - self.t0
        self.events.append((t, text))
        if self.verbose:
            print("%7.2f %s" % (t, text), flush=True)

    def tail(self, node, lines=15):
        try:
            with open(node.log, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def poll_logs(self):
        """Follows who hosts from the agents' own lines (the order the driver reads them
        in, every 20 ms, stands for the order they were written in)."""
        for node in self.nodes:
            if node.log is None:
                continue
            try:
                with open(node.log, "rb") as f:
                    f.seek(node.log_at)
                    data = f.read()
            except OSError:
                continue
            data = data[:data.rfind(b"\n") + 1]
            node.log_at += len(data)
            for line in data.decode(errors="replace").splitlines():
                for text, hosts in HOST_LINES:
                    if text in line and (hosts or self.host == node.index):
                        self.host = node.index if hosts else None

    # -- the workers' records --
    def poll_workers(self):
        try:
            with open(self.records, "rb") as f:
                f.seek(self.read_at)
                data = f.read()
        except FileNotFoundError:
            data = b""
        complete = data[:data.rfind(b"\n") + 1]
        self.read_at += len(complete)
        for line in complete.decode(errors="replace").splitlines():
            p = line.split()
            if len(p) >= 3 and p[0] in ("stop", "reduced", "wrong") and int(p[1]) in self.workers:
                if p[0] == "stop":
                    self.end(int(p[1]), float(p[2]))
                else:
                    self.workers[int(p[1])][p[0]] = line
            if len(p) != 8 or p[0] != "start":
                continue
            if int(p[6]) in self.workers:  # a pid used again: keep the earlier worker
                self.past.append(self.workers.pop(int(p[6])))
            self.workers[int(p[6])] = {"node": int(p[1]), "round": int(p[2]), "group_rank": int(p[3]),
                                       "world": int(p[4]), "store": p[5], "start": float(p[7]),
                                       "end": None, "gone": False}
        now = time.time()
        for pid, w in self.workers.items():
            if not w["gone"] and not _alive(pid):
                w["gone"] = True
                self.end(pid, now)

    def end(self, pid, t):
        w = self.workers[pid]
        w["end"] = t if w["end"] is None else min(w["end"], t)

    def live_workers(self):
        return [pid for pid, w in self.workers.items() if not w["gone"]]

    # -- faults --
    def impaired(self):
        return [n for n in self.nodes if n.impaired()]

    def inject(self):
        """One fault, or two at once; agent faults only while a majority is sure."""
        impaired = self.impaired()
        quiet = time.monotonic() - self.last_agent_fault_end > 2 * self.heartbeat_timeout
        kinds = ["kill_worker"]
        if not impaired and quiet:
            kinds += ["agent", "agent", "two_at_once"] if self.max_impaired >= 2 else ["agent"]
        elif 0 < len(impaired) < self.max_impaired:
            kinds += ["agent"]  # a second fault while the first lasts
        kind = self.rng.choice(kinds)
        first = not [f for f in self.faults if f["kind"] != "kill_worker"]
        if first and "two_at_once" in kinds:
            kind = "two_at_once"  # every short run has two faults at once, the host's among them
        if kind == "kill_worker":
            return self.kill_worker()
        targets = self.pick_targets(2 if kind == "two_at_once" else 1)
        kinds = [self.agent_fault_kind() for _ in targets]
        side = self.rng.choice((1, 2))
        for target, fault in zip(targets, kinds):
            # Two cuts at once: the same side (they reach each other) or one each.
            getattr(self, fault)(target, side if self.rng.random() < 0.5 else 3 - side)

    def agent_fault_kind(self):
        """A kind not drawn yet while there is one (a short run has them all), else any; in
        network namespaces a cut is drawn as often as the other two together."""
        kinds = AGENT_FAULTS + (("cut", "cut") if self.net else ())
        drawn = {f["kind"] for f in self.faults}
        return self.rng.choice([k for k in kinds if k not in drawn] or kinds)

    def pick_targets(self, count):
        """`count` healthy agents, the current host first the first time and about half the
        time after."""
        healthy = [n for n in self.nodes if not n.impaired() and n.proc.poll() is None]
        self.rng.shuffle(healthy)
        host = [n for n in healthy if n.index == self.host]
        if host and (self.rng.random() < 0.5 or not [f for f in self.faults if f["host"]]):
            healthy.remove(host[0])
            healthy.insert(0, host[0])
        return healthy[:count]

    def fault(self, kind, node, text):
        self.faults.append({"kind": kind, "node": node.index, "host": node.index == self.host,
                            "concurrent": bool([n for n in self.impaired() if n is not node])})
        self.note("%s node %d%s%s" % (kind, node.index, " (the host)" if node.index == self.host else "",
                                      text))

    def kill_worker(self):
        live = sorted(self.live_workers())
        if not live:
            return
        pid = self.rng.choice(live)
        w = self.workers[pid]
        self.note("kill_worker node %d (round %d, pid %d)" % (w["node"], w["round"], pid))
        self.faults.append({"kind": "kill_worker", "node": w["node"], "host": False,
                            "concurrent": False})
        try:
            self.end(pid, time.time())
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def kill_agent(self, node, side=None):
        pid = agent_under_guardian(node.proc.pid)
        if pid is None:
            return
        node.down_until = time.monotonic() + self.rng.uniform(1, 2 * self.heartbeat_timeout)
        self.fault("kill_agent", node, " (pid %d)" % pid)
        if self.host == node.index:
            self.host = None
        os.kill(pid, signal.SIGKILL)

    def stop_agent(self, node, side=None):
        pid = agent_under_guardian(node.proc.pid)
        if pid is None:
            return
        node.stopped_until = time.monotonic() + self.rng.uniform(0.5, 2.5 * self.heartbeat_timeout)
        node.stopped_pid = pid
        self.fault("stop_agent", node, " (pid %d) for %.1f s" % (pid, node.stopped_until - time.monotonic()))
        os.kill(pid, signal.SIGSTOP)

    def cut(self, node, side):
        node.cut_until = time.monotonic() + self.rng.uniform(1, 4 * self.heartbeat_timeout)
        self.fault("cut", node, " to side %d for %.1f s" % (side, node.cut_until - time.monotonic()))
        self.net.move(node.index, side)
        node.cuts.append([time.time(), None])

    def heal(self, node):
        self.net.move(node.index, 0)
        node.cuts[-1][1] = time.time()
        node.cut_until = None
        self.note("heal node %d" % node.index)

    def tend_agents(self):
        now = time.monotonic()
        for node in self.nodes:
            if node.stopped_until is not None and now >= node.stopped_until:
                self.note("cont_agent node %d" % node.index)
                try:
                    os.kill(node.stopped_pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
                node.stopped_until = None
                self.last_agent_fault_end = now
            if node.cut_until is not None and now >= node.cut_until:
                self.heal(node)
                self.last_agent_fault_end = now
            rc = node.proc.poll()
            if rc is None:
                continue
            if node.down_until is None:  # an exit no fault of ours caused
                self.violations.append("agent node %d exited %d at %.1f s, no fault caused it:\n%s"
                                       % (node.index, rc, now - self.t0, self.tail(node)))
                self.note("unexplained exit node %d rc %d" % (node.index, rc))
                node.down_until = now + 1
            elif now >= node.down_until:
                self.note("restart_agent node %d" % node.index)
                self.start(node)
                self.last_agent_fault_end = now

    # -- the run --
    def run(self):
        if self.net:
            self.net.create()
        try:
            self.drive()
        finally:
            if self.net:
                self.net.remove()
        self.poll_workers()
        fault_check.check(self)
        return self

    def drive(self):
        self.t0 = time.monotonic()
        self.t0_epoch = time.time()
        self.last_agent_fault_end = self.t0
        for node in self.nodes:
            self.start(node)
            if node.index == 0:
                self.wait_hosting(node)
        end = self.t0 + self.duration_s
        next_fault = time.monotonic() + 5 + self.rng.uniform(*self.fault_every)  # round 0 first
        try:
            while time.monotonic() < end:
                self.poll_workers()
                self.poll_logs()
                self.tend_agents()
                if time.monotonic() >= next_fault:
                    self.inject()
                    next_fault = time.monotonic() + self.rng.uniform(*self.fault_every)
                time.sleep(0.02)
        finally:
            self.stop_all()

    def wait_hosting(self, node):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            self.poll_logs()
            if self.host == node.index:
                return
            if node.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError("the first agent never hosted:\n" + self.tail(node))

    def stop_all(self):
        for node in self.nodes:
            if node.cut_until is not None:
                self.heal(node)
            if node.stopped_until is not None:
                os.kill(node.stopped_pid, signal.SIGCONT)
                node.stopped_until = None
            if node.proc and node.proc.poll() is None:
                node.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 30
        for node in self.nodes:
            if node.proc is None:
                continue
            try:
                node.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.violations.append("agent node %d did not end within 30 s of SIGTERM:\n%s"
                                       % (node.index, self.tail(node)))
                os.killpg(node.proc.pid, signal.SIGKILL)
                node.proc.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            self.poll_workers()
            if not self.live_workers():
                break
            time.sleep(0.05)
        for pid in self.live_workers():
            self.violations.append("worker pid %d (node %d) outlived its agent"
                                   % (pid, self.workers[pid]["node"]))
            os.kill(pid, signal.SIGKILL)

    def report(self):
        return fault_check.report(self)

    def cleanup(self):
        if self.own_dir and not self.violations:
            shutil.rmtree(self.dir, ignore_errors=True)
