#!/usr/bin/python3
"""cluster.smoke: the test cluster itself is a real multi-node Slurm.

Brings up 3 nodes (no plugin), checks what the plugin tests rely on, tears down.
"""

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cluster import CLUSTER_SH, Cluster, ClusterTestCase, main as cluster_main, slurm_pmix_missing, take_lock  # noqa: E402


def our_leftovers() -> list[str]:
    """Live (non-zombie) Slurm daemons/steps and elastic- namespaces."""
    left = []
    # Only this PID namespace: the other systems of the matrix run their own
    # clusters at the same time, each in a root with a PID namespace of its own.
    own_ns = os.readlink("/proc/self/ns/pid")
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{pid}/ns/pid") != own_ns:
                continue
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if comm in ("slurmctld", "slurmd", "slurmstepd") and state not in ("Z", "X"):
            left.append(f"process {pid} {comm}")
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    left += [f"netns {line.split()[0]}" for line in ns.splitlines() if line.startswith("elastic-")]
    return left


class Test1Smoke(ClusterTestCase):
    nodes = 3

    def test_hostnames_are_the_node_names(self):
        r = self.cluster.srun(["-N3", "hostname"], timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(r.stdout.split()), ["n1", "n2", "n3"])

    def test_fake_gpus(self):
        r = self.cluster.srun(["-N2", "--gpus-per-node=4", "sh", "-c",
                               'echo "$SLURMD_NODENAME $CUDA_VISIBLE_DEVICES $SLURM_GPUS_ON_NODE"'], timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = sorted(r.stdout.splitlines())
        self.assertEqual(lines, ["n1 0,1,2,3 4", "n2 0,1,2,3 4"])

    @unittest.skipIf(slurm_pmix_missing(), slurm_pmix_missing())
    def test_pmix_across_nodes(self):
        r = self.cluster.srun(["--mpi=pmix", "-N3", "sh", "-c", 'echo "$(hostname) $PMIX_RANK $PMIX_NAMESPACE"'],
                              timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = sorted(line.split() for line in r.stdout.splitlines())
        self.assertEqual([(h, rank) for h, rank, _ in rows], [("n1", "0"), ("n2", "1"), ("n3", "2")])
        self.assertEqual(len({ns for _, _, ns in rows}), 1, rows)

    def test_reserved_ports(self):
        # Note: on 22.05 a bare --resv-ports (no count) with -N3 exports nothing;
        # --resv-ports=1 gives one port per node, the same on every node.
        r = self.cluster.srun(["-N3", "--resv-ports=1", "printenv", "SLURM_STEP_RESV_PORTS"], timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        ports = set(r.stdout.split())
        self.assertEqual(len(ports), 1, r.stdout)
        self.assertTrue(12000 <= int(ports.pop()) <= 12999)

    def test_node_names_do_not_resolve(self):
        for where in (["run"], ["node-run", "n2"]):
            r = subprocess.run([str(CLUSTER_SH), *where, "getent", "hosts", "n1"], capture_output=True, text=True)
            self.assertNotEqual(r.returncode, 0, f"{where}: n1 resolves: {r.stdout}")

    def test_munge_default_socket_from_a_node(self):
        # libmunge clients (our rendezvous) find the cluster's munged on the default socket.
        r = self.cluster.node_run("n3", ["sh", "-c", "munge -n | unmunge"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("STATUS:          Success", r.stdout)

    def test_sbatch_runs_steps_on_all_nodes(self):
        rc, job, out = self.cluster.sbatch("#!/bin/sh\nsrun hostname\n", ["-N3"], timeout=120)
        self.assertEqual(rc, 0, out)
        self.assertGreater(job, 0)
        self.assertEqual(sorted(out.split()), ["n1", "n2", "n3"])

    def test_kill_and_restart_node(self):
        self.assertTrue(self.cluster.node_pids("n3"))
        self.cluster.kill_node("n3")
        self.assertEqual(self.cluster.node_pids("n3"), [])
        self.cluster.start_node("n3")
        # slurmd re-registers at start; the step runs once it has.
        r = self.cluster.srun(["-N1", "-w", "n3", "hostname"], timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "n3")


LOCKED_ENV = dict(os.environ, ELASTIC_CLUSTER_LOCK_HELD="1")


class Test2Teardown(unittest.TestCase):
    """Each test holds the machine-wide cluster lock, so that nobody else's
    cluster shows up in the leftover checks."""

    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("needs root")
        fd = take_lock()
        self.addCleanup(os.close, fd)

    def test_down_leaves_nothing_and_is_idempotent(self):
        c = Cluster(nodes=2, take_lock=False)  # setUp holds the lock
        c.up()
        try:
            bg = c.popen(["srun", "-N2", "sleep", "300"])
            # Bounded wait until the task runs on both nodes, so that down has tasks to kill.
            for _ in range(1200):
                if all(any(b"sleep\x00300" in Path(f"/proc/{p}/cmdline").read_bytes()
                           for p in c.node_pids(n) if os.path.exists(f"/proc/{p}"))
                       for n in ("n1", "n2")):
                    break
                self.assertIsNone(bg.poll(), bg.communicate() if bg.poll() is not None else "")
                time.sleep(0.05)
            else:
                self.fail("the step did not start")
        finally:
            c.down()
        bg.communicate(timeout=60)
        self.assertEqual(our_leftovers(), [])
        self.assertFalse(os.path.exists("/run/munge/munge.socket.2"))
        c.down()  # again: nothing to do, no error
        self.assertEqual(our_leftovers(), [])

    def test_interrupted_up_cleans_up(self):
        # SIGTERM while `up` is waiting for the nodes: its trap tears everything down.
        p = subprocess.Popen([str(CLUSTER_SH), "up", "--nodes", "2"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=LOCKED_ENV)
        # Wait (bounded) until up has created something worth cleaning: slurmctld's pid file.
        pidfile = Path("/tmp/slurm-elastic-cluster/pids/slurmctld.pid")
        for _ in range(600):
            if pidfile.exists() or p.poll() is not None:
                break
            time.sleep(0.01)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=120)
        if p.returncode == 0:
            # up finished before the signal arrived: nothing was interrupted.
            subprocess.run([str(CLUSTER_SH), "down"], check=True, env=LOCKED_ENV)
        else:
            self.assertEqual(p.returncode, 143, err)
            self.assertIn("tearing down", err)
        self.assertEqual(our_leftovers(), [])

    def test_signal_to_a_test_process_tears_down(self):
        # A test process that is terminated (SIGTERM) or interrupted (SIGINT)
        # while its cluster is up takes the cluster down before it dies.
        child = ("import sys, time; sys.path.insert(0, %r)\n"
                 "from cluster import Cluster\n"
                 "Cluster(nodes=1, take_lock=False).up()\n"
                 "print('up', flush=True)\n"
                 "time.sleep(600)\n") % str(CLUSTER_SH.parent)
        for sig in (signal.SIGTERM, signal.SIGINT):
            with self.subTest(sig=sig.name):
                p = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=LOCKED_ENV)
                line = p.stdout.readline()  # blocks until the cluster is up (or the child died)
                self.assertEqual(line.strip(), "up", p.stderr.read() if p.poll() is not None else "")
                self.assertTrue(os.path.exists("/run/netns/elastic-n1"))
                p.send_signal(sig)
                p.communicate(timeout=120)
                self.assertEqual(p.returncode, -sig)
                self.assertEqual(our_leftovers(), [])
                self.assertFalse(os.path.exists("/run/munge/munge.socket.2"))

    def test_foreign_munged_is_refused_and_left_alone(self):
        sock = "/run/munge/munge.socket.2"
        if os.path.exists(sock):
            self.skipTest(f"{sock} exists")
        key_dir = Path(tempfile.mkdtemp(prefix="foreign-munge-"))
        self.addCleanup(subprocess.run, ["rm", "-rf", str(key_dir)])
        os.chmod(key_dir, 0o755)
        (key_dir / "key").mkdir(mode=0o700)
        (key_dir / "key" / "k").write_bytes(os.urandom(1024))
        os.chmod(key_dir / "key" / "k", 0o600)
        made_dir = not os.path.isdir("/run/munge")
        os.makedirs("/run/munge", mode=0o755, exist_ok=True)
        m = subprocess.Popen(["munged", "-F", f"--key-file={key_dir}/key/k", f"--pid-file={key_dir}/pid",
                              f"--log-file={key_dir}/log", f"--seed-file={key_dir}/seed"],
                             stderr=subprocess.DEVNULL)

        def stop():
            m.terminate()
            m.wait()
            if made_dir:
                subprocess.run(["rm", "-rf", "/run/munge"])
        self.addCleanup(stop)
        for _ in range(200):  # bounded: until the foreign munged answers
            if subprocess.run(["munge", "-n"], capture_output=True).returncode == 0:
                break
            time.sleep(0.05)
        r = subprocess.run([str(CLUSTER_SH), "up", "--nodes", "1"], capture_output=True, text=True, env=LOCKED_ENV)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("a munged that is not ours already serves", r.stderr)
        subprocess.run([str(CLUSTER_SH), "down"], check=True, env=LOCKED_ENV)
        self.assertIsNone(m.poll())
        self.assertEqual(subprocess.run(["munge", "-n"], capture_output=True).returncode, 0)
        self.assertEqual(our_leftovers(), [])
        # Opt-in: use it (e.g. a CI runner whose munge service runs).
        reuse = dict(LOCKED_ENV, ELASTIC_CLUSTER_REUSE_MUNGE="1")
        r = subprocess.run([str(CLUSTER_SH), "up", "--nodes", "2"], capture_output=True, text=True, env=reuse)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = subprocess.run([str(CLUSTER_SH), "run", "srun", "-N2", "hostname"], capture_output=True, text=True,
                           env=reuse, timeout=60)
        self.assertEqual(sorted(r.stdout.split()), ["n1", "n2"], r.stderr)
        subprocess.run([str(CLUSTER_SH), "down"], check=True, env=reuse)
        self.assertIsNone(m.poll())
        self.assertEqual(subprocess.run(["munge", "-n"], capture_output=True).returncode, 0)
        self.assertEqual(our_leftovers(), [])

    def test_down_finds_a_cluster_started_with_another_dir(self):
        other = tempfile.mkdtemp(prefix="cluster-other-dir-")
        self.addCleanup(subprocess.run, ["rm", "-rf", other])
        subprocess.run([str(CLUSTER_SH), "--dir", other, "up", "--nodes", "1"], check=True,
                       capture_output=True, env=LOCKED_ENV)
        r = subprocess.run([str(CLUSTER_SH), "run", "true"], capture_output=True, text=True, env=LOCKED_ENV)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(f"--dir {other}", r.stderr)
        subprocess.run([str(CLUSTER_SH), "down"], check=True, env=LOCKED_ENV)  # the default --dir
        self.assertEqual(our_leftovers(), [])
        self.assertFalse(os.path.exists("/run/munge/munge.socket.2"))
        # No munged of that cluster (other people's munged on other sockets may run).
        r = subprocess.run(["pgrep", "-a", "-x", "munged"], capture_output=True, text=True)
        self.assertNotIn(f"--key-file={other}/", r.stdout)

    def test_failed_up_reports_and_cleans_up(self):
        r = subprocess.run([str(CLUSTER_SH), "up", "--plugin", "/nonexistent/spank_x.so"],
                           capture_output=True, text=True, env=LOCKED_ENV)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no file", r.stderr)
        self.assertEqual(our_leftovers(), [])


if __name__ == "__main__":
    cluster_main()
