#!/usr/bin/python3
"""containers.oci: `srun --elastic --container=BUNDLE` through Slurm's own OCI
support (oci.conf, runc from Debian) on the test cluster. The bundle's rootfs
is ANOTHER Debian release's root of the test matrix (python3-torch, none of our
files), used read-only; launcher= points nowhere, so only the agent bundle,
passed in by oci.conf's runtime line as descriptor 3, can start the agent
(docs/containers.md, "Slurm's OCI containers").

Slurm 23.02 and later move the task's final argv and environment into the
bundle's config.json after task_init: the step runs. 22.05 writes config.json
when the step starts: the plugin refuses, naming the release.

Environment: SPANK_SO, AGENT_BUNDLE (set by CMake).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "cluster"))
sys.path.insert(0, str(HERE.parent / "spank"))
from cluster import ClusterTestCase, main as cluster_main  # noqa: E402
from test_pyxis_standin import IMAGE as ROOT_IMAGE, ROOTS, assert_contract_after_one_restart  # noqa: E402
from test_pyxis_standin import image_without_torch, side_programs_run_on_the_host  # noqa: E402
from test_pyxis_standin import usr1_then_lose_the_first_node  # noqa: E402
import test_spank_e2e  # noqa: E402
from test_spank_e2e import Background, records, sigterm_ranks  # noqa: E402

SPANK_SO = os.environ.get("SPANK_SO", str(REPO / "build/spank_plugin/spank_elastic.so"))
AGENT_BUNDLE = os.environ.get("AGENT_BUNDLE", str(REPO / "build/agent-bundle"))
# Inside a root of the matrix, scripts/in-root.sh shows the other roots here.
IMAGES = Path("/var/cache/slurm-elastic/images")
IMAGE = ROOT_IMAGE or next((p for p in sorted(IMAGES.glob("*")) if (p / "usr/bin/python3").exists()), None)
RUNC = shutil.which("runc")
TIMEOUT = 300
# Where the repository appears in the container: under the bundle's /run tmpfs,
# so that runc never creates a mount point in the shared, read-only rootfs.
IN_REPO = "/run/repo"
WORKER = f"{IN_REPO}/tests/spank/worker.py"
# The README's example: a script that imports torch at its top, as users' do (worker.py's
# import is conditional: LIGHT_TEST_WORKER), for the interpreter check's scenarios.
TRAIN = f"{IN_REPO}/examples/train.py"


def slurm_release() -> tuple[int, int] | None:
    """The installed slurmd's release (srun --version needs a configuration)."""
    out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "slurmd"], capture_output=True,
                         text=True).stdout
    m = re.match(r"(\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else None


RELEASE = slurm_release() or (0, 0)
RUNS = RELEASE >= (23, 2)  # else the plugin refuses (config.json is written before any plugin)


def net_namespaces(names) -> set[int]:
    """The inodes of this test's own network namespace and of the named ones."""
    inodes = {os.stat("/proc/self/ns/net").st_ino}
    for name in names:
        try:
            inodes.add(os.stat(f"/run/netns/{name}").st_ino)
        except OSError:
            pass  # the cluster is down
    return inodes


def command_lines(net_inodes: set[int]) -> list[str]:
    """The command lines of the processes in those network namespaces: the test
    cluster's (the matrix runs the other systems' suites at the same time, each in
    a network namespace of its own; from Debian 12, /proc shows their processes)."""
    lines = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if os.stat(proc / "ns/net").st_ino not in net_inodes:
                continue
            lines.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            pass  # gone meanwhile
    return lines


def bundle_config(cpus: str | None = None) -> dict:
    """config.json: the other release's root read-only, host network and host
    name (the node's namespaces), fresh /run and /tmp, the repository at IN_REPO;
    with CPUS, the container's cpuset (runc makes its cgroup)."""
    def mount(dest, kind, source, *options):
        return {"destination": dest, "type": kind, "source": source, "options": list(options)}
    return {
        "ociVersion": "1.0.2",
        "root": {"path": str(IMAGE), "readonly": True},
        "process": {"terminal": False, "user": {"uid": 0, "gid": 0}, "cwd": "/",
                    "args": ["/bin/false"],  # slurmstepd writes the task's own
                    "env": ["PATH=/usr/local/bin:/usr/bin:/bin"],
                    "noNewPrivileges": True},
        "mounts": [
            mount("/proc", "proc", "proc"),
            mount("/dev", "tmpfs", "tmpfs", "nosuid", "strictatime", "mode=755", "size=65536k"),
            mount("/dev/pts", "devpts", "devpts", "nosuid", "noexec", "newinstance", "ptmxmode=0666",
                  "mode=0620"),
            mount("/dev/shm", "tmpfs", "shm", "nosuid", "noexec", "nodev", "mode=1777", "size=65536k"),
            mount("/sys", "none", "/sys", "rbind", "nosuid", "noexec", "nodev", "ro"),
            mount("/run", "tmpfs", "tmpfs", "nosuid", "nodev", "mode=755"),
            mount("/tmp", "tmpfs", "tmpfs", "nosuid", "nodev", "mode=1777"),
            mount(IN_REPO, "none", str(REPO), "rbind", "ro"),
        ],
        "linux": {"namespaces": [{"type": t} for t in ("pid", "ipc", "mount")],
                  "maskedPaths": ["/proc/kcore", "/proc/keys", "/proc/timer_list"],
                  "readonlyPaths": ["/proc/sys", "/proc/sysrq-trigger"],
                  **({"resources": {"cpu": {"cpus": cpus}}} if cpus else {})},
    }


def oci_conf(runc_root: str) -> str:
    """runc as root (the test cluster's jobs run as root), the agent bundle
    opened on the host as descriptor 3 and passed in (docs/containers.md)."""
    name = "%n.%u.%j.%s.%t"
    runc = f"{RUNC} --root={runc_root}"
    lines = [f'RunTimeQuery="{runc} state {name}"',
             f'RunTimeKill="{runc} kill -a {name}"',
             f'RunTimeDelete="{runc} delete --force {name}"',
             f'RunTimeRun="exec 3<{AGENT_BUNDLE} && {runc} run --preserve-fds=1 {name} -b %b"']
    if RUNS:
        # 23.02+: Slurm's spool directory, on the bundle's /run tmpfs (not in the rootfs).
        lines.append("MountSpoolDir=/run/slurm")
    return "\n".join(lines) + "\n"


@unittest.skipIf(IMAGE is None, f"no rootfs of another Debian release in {ROOTS} or {IMAGES} "
                 "(scripts/make-root.sh)")
@unittest.skipIf(RUNC is None, "no runc (scripts/install-deps.sh installs it)")
@unittest.skipIf(RELEASE == (0, 0), "no Debian slurmd package to tell the Slurm release by")
class TestOciContainer(ClusterTestCase):
    nodes = 3  # the first node's loss needs two survivors: a strict majority of the last round

    @classmethod
    def setUpClass(cls):
        cls.work = Path(tempfile.mkdtemp(prefix="elastic-oci-"))
        cls.addClassCleanup(shutil.rmtree, cls.work, ignore_errors=True)
        cls.bundle = cls.work / "bundle"
        cls.bundle.mkdir()
        (cls.bundle / "config.json").write_text(json.dumps(bundle_config(), indent=1))
        # The same image in a cpuset of one CPU, the machine's last.
        cls.last_cpu = max(os.sched_getaffinity(0))
        cls.cpuset_bundle = cls.work / "bundle-cpuset"
        cls.cpuset_bundle.mkdir()
        (cls.cpuset_bundle / "config.json").write_text(json.dumps(bundle_config(str(cls.last_cpu)), indent=1))
        cls.runc_root = str(cls.work / "runc")
        (cls.work / "oci.conf").write_text(oci_conf(cls.runc_root))
        (cls.work / "plugstack.conf").write_text(
            # token_key: set, as on a site that enables it; OCI containers get no token
            # (the runtime passes only oci.conf's descriptors: docs/containers.md).
            f"required {SPANK_SO} launcher=/nonexistent/elasticrun agent_bundle={AGENT_BUNDLE} "
            "token_key=@TOKEN_KEY@\n")
        cls.plugstack = str(cls.work / "plugstack.conf")
        cls.oci_conf = str(cls.work / "oci.conf")
        super().setUpClass()

    def srun(self, args):
        # The image's torch 2.x (Debian's) has no libuv; workers bind gloo to eth0.
        env = {"GLOO_SOCKET_IFNAME": "eth0", "ELASTIC_TORCH_NO_LIBUV": "1"}
        return self.cluster.srun(["-N2", f"--container={self.bundle}", *args], timeout=TIMEOUT, env=env)

    def containers(self) -> str:
        r = subprocess.run([RUNC, f"--root={self.runc_root}", "list", "-q"], capture_output=True, text=True)
        return r.stdout.strip()

    def delete_containers_of(self, node):
        """What a killed node's slurmstepd can no longer clean up, cleaned as the node's
        reboot would: its containers in runc's state (named %n.%u.%j.%s.%t: oci_conf) and
        its steps' spool directories."""
        for name in self.containers().split():
            if name.startswith(f"{node}."):
                subprocess.run([RUNC, f"--root={self.runc_root}", "delete", "--force", name], capture_output=True)
        for spool in (self.cluster.dir / "spool").glob(f"{node}/oci-job*"):
            shutil.rmtree(spool, ignore_errors=True)

    def assert_nothing_left(self):
        """No container in runc's state, no task spool directory, no process of the step."""
        # slurmstepd deletes the containers and removes the spool directories after srun
        # has returned (cleanup_container): a deadline for both.
        deadline = time.monotonic() + 30
        while (left := self.containers()) and time.monotonic() < deadline:
            time.sleep(0.2)
        if left:
            # Said, and then cleaned as the nodes' reboot would, so that the later tests
            # of the file do not all fail on this one's leftovers (sid, 2026-12-06: one
            # scancel left its containers in runc's state and five tests failed).
            states = subprocess.run([RUNC, f"--root={self.runc_root}", "list"], capture_output=True,
                                    text=True).stdout
            for node in self.cluster.node_names():
                self.delete_containers_of(node)
            self.fail("containers left in runc's state 30 s after srun returned:\n" + states
                      + self.cluster.logs()[-6000:])
        spool = self.cluster.dir / "spool"
        while (left := sorted(str(f) for d in spool.glob("*/oci-job*") for f in [d, *d.rglob("*")])) \
                and time.monotonic() < deadline:
            time.sleep(0.2)
        self.assertEqual(left, [], self.cluster.logs()[-6000:])
        # The nodes share this machine's processes (network namespaces only).
        marks = (self.runc_root, IN_REPO, "/proc/self/fd/3/", "host-runner")
        names = [f"elastic-{n}" for n in (*self.cluster.node_names(), "hub")]
        left = [cmd for cmd in command_lines(net_namespaces(names)) if any(m in cmd for m in marks)]
        self.assertEqual(left, [])

    @unittest.skipUnless(RUNS, f"Slurm {RELEASE[0]}.{RELEASE[1]:02} writes config.json before any plugin")
    def test_worker_contract_and_a_restart_in_the_bundle(self):
        r = self.srun(["--elastic=2", "--gpus-per-node=2", "--elastic-max-restarts=1",
                       "/usr/bin/python3", WORKER, "--fail-once-rank=1"])
        text = assert_contract_after_one_restart(self, r)
        # Slurm's node state before round 1: the container has the job's SLURM_CONF but
        # not the file; the plugin's host runner (by name: the abstract socket) asks
        # Slurm on the host, so no node says it could not.
        self.assertNotIn("names no file here", text)
        self.assertNotIn("host runner", text)
        self.assert_nothing_left()
        # The workers ran the image's python and glibc, none of our files in the
        # rootfs, no loader path and no descriptor of ours inherited.
        probe = self.srun(["--elastic=2", "--elastic-nproc-per-node=1", "/usr/bin/python3", "-c",
                           "import os, platform; print('IMAGE', platform.libc_ver()[1], "
                           "os.environ.get('LD_LIBRARY_PATH', '-'), os.path.exists('/proc/self/fd/3'))"])
        self.assertEqual(probe.returncode, 0, probe.stdout + probe.stderr)
        found = re.findall(r"IMAGE (\S+) (\S+) (\S+)", probe.stdout)
        self.assertEqual(len(found), 2, probe.stdout + probe.stderr)
        for glibc, ld_path, fd3 in found:
            self.assertNotEqual(glibc, os.confstr("CS_GNU_LIBC_VERSION").split()[1])
            self.assertEqual((ld_path, fd3), ("-", "False"))
        self.assert_nothing_left()

    @unittest.skipUnless(RUNS, f"Slurm {RELEASE[0]}.{RELEASE[1]:02} writes config.json before any plugin")
    def test_scontrol_and_the_health_check_run_on_the_host_for_agents_in_the_bundle(self):
        """The node's side programs for agents in an OCI bundle (issue 23: "requeue and the
        other side programs keep working (run them where they exist)"): the runtime passes
        the container no descriptor of the task's, so the plugin's host runner listens on an
        abstract socket in the node's network namespace, which the bundle shares (host
        networking), and the agent connects by name (launcher/host_runner.h). A health check
        that exists only on the host passes on both nodes and sees the host's Debian, not the
        image's; the rendezvous host writes the job's live Comment with the host's scontrol
        and slurm.conf; the runners end with their tasks."""
        side_programs_run_on_the_host(self, IMAGE, WORKER, self.srun)
        self.assert_nothing_left()

    @unittest.skipUnless(RUNS, f"Slurm {RELEASE[0]}.{RELEASE[1]:02} writes config.json before any plugin")
    def test_scancel_in_the_bundle_stops_every_worker_and_leaves_nothing(self):
        # As a user ends a training in a container: scancel while the 4 workers train.
        # Slurm signals the container's processes (runc kill -a) and elasticrun forwards:
        # every worker gets SIGTERM, one line says the job was cancelled, srun returns, and
        # no container, spool directory or process of the step is left on either node.
        env = {"GLOO_SOCKET_IFNAME": "eth0", "ELASTIC_TORCH_NO_LIBUV": "1"}
        bg = Background(self.cluster, ["-N2", f"--container={self.bundle}", "--elastic=2", "--gpus-per-node=2",
                                       "/usr/bin/python3", WORKER, "--seconds=600"], env)
        try:
            self.assertTrue(bg.wait_for(lambda t: len(records(t, "READY")) == 4, TIMEOUT), bg.text())
            jobs = self.cluster.job_ids()
            self.assertEqual(len(jobs), 1, jobs)
            self.cluster.run(["scancel", jobs[0]], timeout=30, check=True)
            bg.finish(90)
        finally:
            if bg.proc.poll() is None:
                bg.proc.kill()
        text = bg.text()
        self.assertEqual(sigterm_ranks(text), {0, 1, 2, 3}, text)
        self.assertEqual(text.count("elasticrun: cancelled by Slurm (SIGTERM)"), 1, text)
        deadline = time.monotonic() + 30  # "completing" while slurmstepd cleans up
        while (states := set(self.cluster.node_states().values())) != {"idle"} and time.monotonic() < deadline:
            time.sleep(0.5)
        self.assertEqual(states, {"idle"}, "no node drained:\n" + self.cluster.logs()[-4000:])
        self.assert_nothing_left()

    @unittest.skipUnless(RUNS, f"Slurm {RELEASE[0]}.{RELEASE[1]:02} writes config.json before any plugin")
    def test_usr1_and_the_first_nodes_loss_in_the_bundle_then_nothing_left(self):
        """Issue 23 item 4 with Slurm's OCI containers: `scancel --signal=USR1` reaches every
        worker in the bundles (slurmstepd signals `runc run`, which forwards to the container's
        first process, elasticrun's guardian) and training goes on; then the first node (the
        rendezvous host and the store, its agent in the bundle) is lost with --no-kill: n2's
        agent, in its bundle, takes over and n2 and n3 finish: a strict majority of the last
        round, 2 of 3, as on bare nodes (2 nodes cannot survive a loss: docs/user.md).
        Nothing of the step is left on the survivors; the lost node's container, which no
        slurmstepd is left to delete, is deleted here as a node's reboot would."""
        env = {"GLOO_SOCKET_IFNAME": "eth0", "ELASTIC_TORCH_NO_LIBUV": "1", "PET_SHUTDOWN_TIMEOUT": "10"}
        bg = Background(self.cluster, ["-N3", "--no-kill", f"--container={self.bundle}", "--elastic=2:3",
                                       "--gpus-per-node=1", "--elastic-max-restarts=2", "/usr/bin/python3",
                                       WORKER, "--seconds=12"], env)
        try:
            usr1_then_lose_the_first_node(self, bg)
        finally:
            if bg.proc.poll() is None:
                bg.proc.kill()
            if not self.cluster.node_pids("n1"):  # killed: what its slurmstepd left
                self.delete_containers_of("n1")
                test_spank_e2e.TestSpankEndToEnd.restore_node(self, "n1")
        text = bg.text()
        self.assertIn("taking over as the host", text)
        self.assertEqual(sorted((d["rank"], d["world"]) for d in records(text, "DONE")), [("0", "2"), ("1", "2")],
                         text)
        self.assert_nothing_left()

    @unittest.skipUnless(RUNS, f"Slurm {RELEASE[0]}.{RELEASE[1]:02} writes config.json before any plugin")
    def test_the_binding_plan_stays_in_the_containers_cpuset(self):
        """Issue 23 item 4: the agent plans its binding from the CPUs it may run on in the
        container (the bundle's cpuset: one CPU), not from the machine's: one worker per
        CPU is one worker per node, bound to that CPU, with OMP_NUM_THREADS=1."""
        r = self.cluster.srun(["-N2", f"--container={self.cpuset_bundle}", "--elastic=2",
                               "--elastic-nproc-per-node=cpu", "/bin/sh", "-c",
                               'echo "CPUS rank=$RANK world=$WORLD_SIZE omp=$OMP_NUM_THREADS'
                               ' $(grep Cpus_allowed_list /proc/self/status)"'], timeout=TIMEOUT)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rows = sorted(re.findall(r"CPUS rank=(\d+) world=(\d+) omp=(\d+) Cpus_allowed_list:\s*(\S+)", r.stdout))
        cpu = str(self.last_cpu)
        self.assertEqual(rows, [("0", "2", "1", cpu), ("1", "2", "1", cpu)], r.stdout + r.stderr)
        self.assert_nothing_left()

    def bundle_without_torch(self) -> Path:
        """A bundle whose rootfs is the image without torch (image_without_torch)."""
        top = self.work / "no-torch"
        top.mkdir()
        config = bundle_config()
        config["root"]["path"] = str(image_without_torch(self, IMAGE, top))
        (top / "config.json").write_text(json.dumps(config, indent=1))
        return top

    @unittest.skipUnless(RUNS, f"Slurm {RELEASE[0]}.{RELEASE[1]:02} writes config.json before any plugin")
    def test_an_image_without_torch_is_named_on_every_node_before_any_worker(self):
        """Bad input (issue 23): the image has python but not torch, and the script imports
        it. Each node's agent, in the image, checks the image's interpreter before the
        rendezvous: one message per node naming the interpreter, exit 2 (no restart burnt,
        no requeue), no worker started, no node drained, nothing left."""
        bundle = self.bundle_without_torch()
        r = self.cluster.srun(["-N2", f"--container={bundle}", "--elastic=2", "--elastic-max-restarts=3",
                               "/usr/bin/python3", TRAIN], timeout=TIMEOUT,
                              env={"GLOO_SOCKET_IFNAME": "eth0", "ELASTIC_TORCH_NO_LIBUV": "1"})
        text = r.stdout + r.stderr
        self.assertEqual(r.returncode, 2, text)
        self.assertEqual(text.count("the interpreter '/usr/bin/python3' cannot import torch"), 2, text)
        self.assertNotRegex(text, r"\[rank\d+\]:")  # no worker started: not one line of one
        self.assertNotIn("round 0", text)
        self.assertEqual(set(self.cluster.node_states().values()), {"idle"}, "no node drained")
        self.assert_nothing_left()

    @unittest.skipUnless(RUNS, f"Slurm {RELEASE[0]}.{RELEASE[1]:02} writes config.json before any plugin")
    def test_a_bundle_with_a_network_of_its_own_is_named_on_every_node(self):
        """Bad input (issue 23: "a container that cannot reach the rendezvous"): the bundle's
        config.json asks for a network namespace, so each container has loopback only. Each
        node's agent says so at once, naming the rendezvous host and the remedy, exit 2; no
        worker starts (with a minimum of one node, the agents used to train alone, each in a
        world of its own: the others after taking over as the host), no node is drained,
        nothing is left."""
        top = self.work / "own-network"
        top.mkdir()
        config = bundle_config()
        config["linux"]["namespaces"].append({"type": "network"})
        (top / "config.json").write_text(json.dumps(config, indent=1))
        r = self.cluster.srun(["-N2", f"--container={top}", "--elastic=1:2", "--elastic-max-restarts=3",
                               "/usr/bin/python3", WORKER], timeout=TIMEOUT,
                              env={"GLOO_SOCKET_IFNAME": "eth0", "ELASTIC_TORCH_NO_LIBUV": "1"})
        text = r.stdout + r.stderr
        self.assertEqual(r.returncode, 2, text)
        self.assertEqual(text.count("this node has no network but loopback (a container with a network "
                                    "namespace of its own?)"), 2, text)
        self.assertEqual(text.count("run the container with the host's network"), 2, text)
        self.assertNotIn("START", r.stdout)  # the worker's first line
        self.assertNotIn("round 0", text)
        self.assertEqual(set(self.cluster.node_states().values()), {"idle"}, "no node drained")
        self.assert_nothing_left()

    @unittest.skipIf(RUNS, f"Slurm {RELEASE[0]}.{RELEASE[1]:02} runs --elastic in OCI containers")
    def test_refused_naming_the_slurm_release(self):
        r = self.srun(["--elastic=2", "/usr/bin/python3", "-c", "print('RAN')"])
        text = r.stdout + r.stderr
        self.assertNotEqual(r.returncode, 0, text)
        self.assertIn(f"--elastic cannot run in the OCI container '{self.bundle}' on Slurm "
                      f"{RELEASE[0]}.{RELEASE[1]:02}", text)
        self.assertNotIn("RAN", r.stdout)
        self.assertEqual(set(self.cluster.node_states().values()), {"idle"}, "no node drained")
        self.assert_nothing_left()

    def test_a_missing_bundle_is_a_clear_error_and_drains_no_node(self):
        # A user's typo in --container: slurmstepd fails the launch before any plugin runs
        # (its own words: "Task launch ... failed on node n1: No such file or directory" on
        # 22.05, "Unspecified error" on 24.11 and 26.05; the path is not named, and no
        # plugin can add it: docs/containers.md), the nodes stay idle (a plugin never
        # drains a node for a user's mistake) and nothing is left behind.
        missing = str(self.work / "no-such-bundle")
        r = self.cluster.srun(["-N2", f"--container={missing}", "--elastic=2", "/usr/bin/python3", "-c",
                               "print('RAN')"], timeout=TIMEOUT)
        text = r.stdout + r.stderr
        self.assertNotEqual(r.returncode, 0, text)
        self.assertRegex(text, r"Task launch for StepId=\d+\.0 failed on node n1", text)
        self.assertNotIn("RAN", r.stdout)
        self.assertEqual(set(self.cluster.node_states().values()), {"idle"}, "no node drained")
        self.assert_nothing_left()

    @unittest.skipUnless(RUNS, f"Slurm {RELEASE[0]}.{RELEASE[1]:02} writes config.json before any plugin")
    def test_a_program_the_image_lacks_is_named_on_every_node(self):
        # The program exists on the host but not in the image: each node's agent, inside
        # the image, says so (what it looked for), the step fails, no node is drained.
        r = self.srun(["--elastic=2", "/usr/bin/no-such-python3", "train.py"])
        text = r.stdout + r.stderr
        self.assertNotEqual(r.returncode, 0, text)
        self.assertGreaterEqual(text.count("/usr/bin/no-such-python3"), 2, text)
        self.assertEqual(set(self.cluster.node_states().values()), {"idle"}, "no node drained")
        self.assert_nothing_left()


if __name__ == "__main__":
    cluster_main()
