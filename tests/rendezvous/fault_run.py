"""A randomized fault run (issue 19, end of item 20): real elasticrun agents on
loopback (c10d rendezvous, one regime-record directory per node, as on real
nodes), light shell workers (no torch), faults drawn from a seeded RNG:

  kill_worker   SIGKILL one running worker (a worker failure: a restart)
  kill_agent    SIGKILL one agent (a node crash); it is started again later with its
                own command line (what docs/user.md prescribes to bring a node back)
  stop_agent    SIGSTOP one agent (a frozen node), SIGCONT later

At most one agent is down or frozen at a time (the others are a strict majority of
any round), so every agent exit other than a SIGKILL of ours and the final SIGTERM
is one no fault caused. The checker fails on
  - two groups of the run training at once: a group is (round, its store's address),
    and it trains from the moment every one of its GROUP_WORLD_SIZE workers runs until
    the first of them is gone; two such spans of different groups overlap;
  - a requeue (`scontrol requeue`, --requeue with a batch job's environment and a fake
    scontrol on PATH) while a group trains;
  - an agent exit that no fault caused.

Used by tests/rendezvous/test_fault_run.py (the short run, a fixed seed, CI) and by
bench/rendezvous/fault_run.py (the long one: more agents, longer, seed from argv).
Each worker appends "start NODE ROUND GROUP_RANK GROUP_WORLD STORE PID TIME" to a shared
file, and "stop PID TIME" when told to stop; the driver watches each worker's pid (every
20 ms) for the time it is gone otherwise."""
import os
import random
import shutil
import signal
import subprocess
import tempfile
import time

from rdzv_test_util import agent_under_guardian

HERE = os.path.dirname(os.path.abspath(__file__))
ELASTICRUN = os.environ.get("ELASTICRUN", os.path.join(HERE, "../../build/launcher/elasticrun"))

# A worker's end: its own "stop" line when it is told to stop (SIGTERM, the usual way);
# the time the driver SIGKILLed it; else when the driver's polling found it gone.
WORKER = ('echo "start $FAULT_NODE $TORCHELASTIC_RESTART_COUNT $GROUP_RANK $GROUP_WORLD_SIZE '
          '$MASTER_ADDR:$MASTER_PORT $$ $(date +%s.%N)" >> "$FAULT_RECORDS"; '
          'trap \'echo "stop $$ $(date +%s.%N)" >> "$FAULT_RECORDS"; exit 0\' TERM; '
          'sleep 100000 & wait')
# Two groups must overlap by more than this to count (clock reads and polling).
SLACK_S = 0.5


def _free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
        self.starts = 0
        self.expected_exit = None  # why the next exit is ours: "sigkill" / "end"
        self.down_until = None     # killed: started again at this time
        self.stopped_until = None  # SIGSTOPped: SIGCONT at this time


class FaultRun:
    def __init__(self, seed, agents=5, duration_s=60, fault_every=(1.5, 4.0), workdir=None,
                 elasticrun=ELASTICRUN, heartbeat_timeout=3, verbose=False):
        self.rng = random.Random(seed)
        self.seed = seed
        self.count = agents
        self.duration_s = duration_s
        self.fault_every = fault_every
        self.elasticrun = elasticrun
        self.heartbeat_timeout = heartbeat_timeout
        self.verbose = verbose
        self.own_dir = workdir is None
        self.dir = workdir or tempfile.mkdtemp(prefix="elastic-fault-run-")
        self.records = os.path.join(self.dir, "records")
        self.scontrol_log = os.path.join(self.dir, "scontrol.log")
        self.port = _free_port()
        self.run_id = "fault-run-%d" % seed
        self.nodes = [Node(i) for i in range(agents)]
        self.events = []      # (time, text): the fault sequence, for the report
        self.violations = []
        self.workers = {}     # pid -> dict(node, round, group_rank, world, store, start, end, gone)
        self.past = []        # workers whose pid a later one got
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
                         "SLURM_JOB_ID": "77", "ENVIRONMENT": "BATCH"})

    # -- agents --
    def argv(self, node):
        conf = ",".join(["munge=0", "state_dir=" + os.path.join(self.dir, "state%d" % node.index),
                         "heartbeat_interval=1", "heartbeat_timeout=%d" % self.heartbeat_timeout,
                         "last_call_timeout=1", "join_timeout=60"])
        return [self.elasticrun, "--nnodes=1:%d" % self.count, "--nproc-per-node=1",
                "--rdzv-backend=c10d", "--rdzv-endpoint=127.0.0.1:%d" % self.port,
                "--rdzv-id=" + self.run_id, "--rdzv-conf=" + conf, "--node-rank=%d" % node.index,
                "--max-restarts=1000000", "--crash-loop-count=0", "--requeue=1",
                "--shutdown-timeout=2", "--no-python", "/bin/sh", "-c", WORKER]

    def start(self, node):
        node.starts += 1
        node.log = os.path.join(self.dir, "agent%d.%d.log" % (node.index, node.starts))
        env = dict(self.env, FAULT_NODE=str(node.index))
        with open(node.log, "wb") as out:
            node.proc = subprocess.Popen(self.argv(node), stdout=out, stderr=subprocess.STDOUT,
                                         env=env, start_new_session=True)
        node.expected_exit = None
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

    # -- the workers' records --
    def poll_workers(self):
        try:
            with open(self.records) as f:
                f.seek(self.read_at)
                data = f.read()
        except FileNotFoundError:
            data = ""
        if data:
            complete = data[:data.rfind("\n") + 1]
            self.read_at += len(complete.encode())
            for line in complete.splitlines():
                p = line.split()
                if len(p) == 3 and p[0] == "stop" and int(p[1]) in self.workers:
                    self.end(int(p[1]), float(p[2]))
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
    def agents_all_up(self):
        return all(n.proc and n.proc.poll() is None and n.down_until is None and n.stopped_until is None
                   for n in self.nodes)

    def inject(self):
        kinds = ["kill_worker"]
        if self.agents_all_up() and time.monotonic() - self.last_agent_fault_end > 2 * self.heartbeat_timeout:
            kinds += ["kill_agent", "stop_agent"]
        kind = self.rng.choice(kinds)
        if kind == "kill_worker":
            live = sorted(self.live_workers())
            if not live:
                return
            pid = self.rng.choice(live)
            w = self.workers[pid]
            self.note("kill_worker node %d (round %d, pid %d)" % (w["node"], w["round"], pid))
            try:
                self.end(pid, time.time())
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            return
        node = self.rng.choice(self.nodes)
        pid = agent_under_guardian(node.proc.pid)
        if pid is None:
            return
        if kind == "kill_agent":
            node.expected_exit = "sigkill"
            node.down_until = time.monotonic() + self.rng.uniform(1, 2 * self.heartbeat_timeout)
            self.note("kill_agent node %d (pid %d)" % (node.index, pid))
            os.kill(pid, signal.SIGKILL)
        else:
            node.stopped_until = time.monotonic() + self.rng.uniform(0.5, 2.5 * self.heartbeat_timeout)
            node.stopped_pid = pid
            self.note("stop_agent node %d (pid %d) for %.1f s"
                      % (node.index, pid, node.stopped_until - time.monotonic()))
            os.kill(pid, signal.SIGSTOP)

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
        self.t0 = time.monotonic()
        self.t0_epoch = time.time()
        self.last_agent_fault_end = self.t0
        for node in self.nodes:
            self.start(node)
            if node.index == 0:
                self.wait_listening()
        end = self.t0 + self.duration_s
        next_fault = self.t0 + 5 + self.rng.uniform(*self.fault_every)  # round 0 first
        try:
            while time.monotonic() < end:
                self.poll_workers()
                self.tend_agents()
                if time.monotonic() >= next_fault:
                    self.inject()
                    next_fault = time.monotonic() + self.rng.uniform(*self.fault_every)
                time.sleep(0.02)
        finally:
            self.stop_all()
        self.poll_workers()
        self.check()
        return self

    def wait_listening(self):
        import socket
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError("the first agent never listened:\n" + self.tail(self.nodes[0]))

    def stop_all(self):
        for node in self.nodes:
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

    # -- the checker --
    def groups(self):
        """(round, store) -> (start, end) of the span where every member ran; None if never."""
        by_key = {}
        for w in list(self.workers.values()) + self.past:
            by_key.setdefault((w["round"], w["store"]), []).append(w)
        spans = {}
        for key, members in by_key.items():
            if len({m["group_rank"] for m in members}) < members[0]["world"]:
                continue  # some member never started: the group never trained
            start = max(m["start"] for m in members)
            end = min(m["end"] for m in members)
            if end > start:
                spans[key] = (start, end, sorted(m["node"] for m in members))
        return spans

    def check(self):
        spans = sorted(self.groups().items(), key=lambda kv: kv[1][0])
        self.trained_groups = len(spans)
        for i, (ka, a) in enumerate(spans):
            for kb, b in spans[i + 1:]:
                overlap = min(a[1], b[1]) - max(a[0], b[0])
                if overlap > SLACK_S:
                    self.violations.append(
                        "two groups trained at once for %.1f s: round %d (store %s, nodes %s) and round %d "
                        "(store %s, nodes %s)" % (overlap, ka[0], ka[1], a[2], kb[0], kb[1], b[2]))
        self.overlaps = sum(1 for v in self.violations if v.startswith("two groups"))
        requeues = []
        if os.path.exists(self.scontrol_log):
            with open(self.scontrol_log) as f:
                requeues = [float(line.split()[0]) for line in f if "requeue" in line]
        for t in requeues:
            during = [k for k, s in spans if s[0] <= t <= s[1]]
            self.violations.append("scontrol requeue at %.1f s%s" % (
                t - self.t0_epoch,
                " while round %d trained" % during[0][0] if during else ""))
        self.requeues = len(requeues)

    def faults(self):
        kinds = {}
        for _, text in self.events:
            kind = text.split()[0]
            if kind in ("kill_worker", "kill_agent", "stop_agent"):
                kinds[kind] = kinds.get(kind, 0) + 1
        return kinds

    def report(self):
        lines = ["fault run: seed %d, %d agents, %.0f s: faults %s, %d groups trained, %d overlaps, "
                 "%d requeues, %d violations" % (self.seed, self.count, self.duration_s, self.faults(),
                                                   self.trained_groups, self.overlaps, self.requeues,
                                                   len(self.violations))]
        if self.violations:
            lines += self.violations
            lines.append("sequence:")
            lines += ["%7.2f %s" % e for e in self.events]
            lines.append("agent logs in %s" % self.dir)
        return "\n".join(lines)

    def cleanup(self):
        if self.own_dir and not self.violations:
            shutil.rmtree(self.dir, ignore_errors=True)
