#!/usr/bin/python3
"""containers.pyxis: `srun --elastic --container-image=ROOTFS` through the pyxis
stand-in (pyxis_standin.c: pyxis's and enroot's steps, each named with its
source) and the agent bundle, on the test cluster. The image is the rootfs of
ANOTHER Debian release of the test matrix (python3-torch, none of our files);
launcher= points nowhere, so only the bundle can start the agent.

Environment: SPANK_SO, AGENT_BUNDLE, PYXIS_STANDIN_SO (set by CMake).
"""

import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE.parent / "cluster"))
sys.path.insert(0, str(HERE.parent / "spank"))
from cluster import ClusterTestCase, main as cluster_main  # noqa: E402
import test_spank_e2e  # noqa: E402  (as a module: its test classes must not be collected here)
from test_spank_e2e import Background, JobProcesses, records  # noqa: E402

SPANK_SO = os.environ.get("SPANK_SO", str(REPO / "build/spank_plugin/spank_elastic.so"))
AGENT_BUNDLE = os.environ.get("AGENT_BUNDLE", str(REPO / "build/agent-bundle"))
STANDIN_SO = os.environ.get("PYXIS_STANDIN_SO", str(REPO / "build/tests/containers/pyxis_standin.so"))
ROOTS = Path("/var/cache/slurm-elastic/roots")
# Inside a root of the matrix, scripts/in-root.sh shows the other roots here (read-only).
IMAGES = Path("/var/cache/slurm-elastic/images")
WORKER = str(REPO / "tests/spank/worker.py")
# The README's example: a script that imports torch at its top, as users' do (worker.py's
# import is conditional: LIGHT_TEST_WORKER), for the interpreter check's scenarios.
TRAIN = str(REPO / "examples/train.py")
ELASTICRUN = os.environ.get("ELASTICRUN", str(REPO / "build/launcher/elasticrun"))
TIMEOUT = 300
APPTAINER = str(HERE / "apptainer_standin.sh")  # `apptainer exec`'s steps (Debian has no apptainer)


def image_root():
    """Another release's rootfs: trixie on bookworm and sid, sid on trixie."""
    codename = ""
    for line in Path("/etc/os-release").read_text().splitlines():
        if line.startswith("VERSION_CODENAME="):
            codename = line.split("=", 1)[1].strip('"')
    for name in (["sid"] if codename == "trixie" else ["trixie", "sid"]):
        for where in (ROOTS, IMAGES):
            if name != codename and (where / name / "usr/bin/python3").exists():
                return where / name
    return None


IMAGE = image_root()


def image_without_torch(test, image: Path, top: Path) -> Path:
    """IMAGE without torch, as an image built without it: an overlay whose upper layer
    hides the image's torch package (a whiteout), mounted at TOP/rootfs until the test
    ends."""
    upper, merged = top / "upper", top / "rootfs"
    torch_dir = next(image.glob("usr/lib/python3*/dist-packages/torch"))
    whiteout = upper / torch_dir.relative_to(image)
    whiteout.parent.mkdir(parents=True)
    os.mknod(whiteout, 0o600 | stat.S_IFCHR, os.makedev(0, 0))
    (top / "work").mkdir()
    merged.mkdir()
    subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                    f"lowerdir={image},upperdir={upper},workdir={top / 'work'}", str(merged)], check=True)
    test.addCleanup(subprocess.run, ["umount", "-l", str(merged)])
    return merged


def assert_contract_after_one_restart(test, r):
    """2 nodes x 2 workers, rank 1 failed once: the step ended 0 and round 1 had
    elasticrun's contract (not enroot's RANK=SLURM_PROCID / WORLD_SIZE=SLURM_NTASKS)
    on all four ranks, each of which finished. Returns the step's whole output."""
    text = r.stdout + r.stderr
    test.assertEqual(r.returncode, 0, text)
    env = [e for e in records(r.stdout, "ENV") if e["restart"] == "1"]
    test.assertEqual(sorted(int(e["rank"]) for e in env), [0, 1, 2, 3], text)
    for e in env:
        test.assertEqual(int(e["world"]), 4, e)
        test.assertEqual(int(e["rank"]), int(e["group_rank"]) * 2 + int(e["local_rank"]), e)
    done = records(r.stdout, "DONE")
    test.assertEqual(sorted(int(d["rank"]) for d in done), [0, 1, 2, 3], text)
    return text


def side_programs_run_on_the_host(test, image, worker, srun):
    """Issue 23: "requeue and the other side programs keep working (run them where they
    exist)", for an agent in `image` running `worker` (srun(args): a 2-node step in it). A health check that
    exists only on the host (/var/tmp, absent from the image) passes on both nodes and sees
    the host's Debian, not the image's; the rendezvous host writes the job's live Comment
    with the host's scontrol and slurm.conf (in the image: "SLURM_CONF names no file here");
    no agent warns about the host runner."""
    hostdir = Path(tempfile.mkdtemp(prefix="elastic-host-only-", dir="/var/tmp"))
    test.addCleanup(shutil.rmtree, hostdir, True)
    check = hostdir / "check.sh"
    check.write_text(f"#!/bin/sh\ncat /etc/debian_version > {hostdir}/seen.$(hostname)\n")
    check.chmod(0o755)
    test.assertFalse((image / str(hostdir).lstrip("/")).exists())
    r = srun(["--elastic=2", "--elastic-nproc-per-node=1", f"--elastic-health-check={check}",
              "/usr/bin/python3", worker])
    text = r.stdout + r.stderr
    test.assertEqual(r.returncode, 0, text)
    test.assertEqual(sorted(p.name for p in hostdir.glob("seen.*")), ["seen.n1", "seen.n2"], text)
    host_debian = Path("/etc/debian_version").read_text().strip()
    test.assertNotEqual(host_debian, (image / "etc/debian_version").read_text().strip())
    for seen in hostdir.glob("seen.*"):
        test.assertEqual(seen.read_text().strip(), host_debian)
    test.assertNotIn("names no file here", text)
    test.assertNotIn("cannot write the job's live status", text)
    test.assertNotIn("host runner", text)
    jobs = test.cluster.run(["scontrol", "-o", "show", "job"], timeout=30).stdout.splitlines()
    last = max(jobs, key=lambda line: int(re.search(r"JobId=(\d+)", line).group(1)))
    test.assertRegex(last, r"Comment=elastic: ended \(done\), round 0, 2/2 nodes, 2 workers", last)


def usr1_then_lose_the_first_node(test, bg):
    """The 3-node step `bg` (1 worker per node) trains: `scancel --signal=USR1` must reach
    every worker, then n1 (the rendezvous host and the store) is killed and n2 and n3 must
    train again with world size 2; waits for the step's end (its status: 24.11+ report
    n1's failure, 22.05 not)."""
    test.assertTrue(bg.wait_for(lambda t: len(records(t, "READY")) == 3, TIMEOUT), bg.text())
    jobs = test.cluster.job_ids()
    test.assertEqual(len(jobs), 1, jobs)
    test.cluster.run(["scancel", "--signal=USR1", jobs[0]], timeout=30, check=True)
    test.assertTrue(bg.wait_for(
        lambda t: {r["rank"] for r in records(t.replace("SIGNAL SIGUSR1", "SIGNAL_USR1"),
                                              "SIGNAL_USR1")} == {"0", "1", "2"}, TIMEOUT), bg.text())
    test.cluster.kill_node("n1")
    test.assertTrue(bg.wait_for(lambda t: len([r for r in records(t, "READY") if r["world"] == "2"]) == 2,
                                TIMEOUT), bg.text())
    bg.finish(TIMEOUT)


# (This decorator once sat on the helper above, which then skipped every test that used it
# where no image was found: the OCI contract test inside the Debian 13 and unstable roots.)
@unittest.skipIf(IMAGE is None, f"no rootfs of another Debian release in {ROOTS} or {IMAGES} "
                 "(scripts/make-root.sh)")
class TestPyxisStandin(JobProcesses, ClusterTestCase):
    nodes = 3  # the first node's loss leaves a majority (2 of 3), with or without Slurm's verdict

    @classmethod
    def setUpClass(cls):
        conf = tempfile.NamedTemporaryFile("w", suffix=".plugstack.conf", delete=False)
        # Ours first, then the container plugin (docs/containers.md).
        # token_key: the per-step token replaces the munge socket the image hides
        # (cluster.sh writes the key and replaces @TOKEN_KEY@).
        conf.write(f"required {SPANK_SO} launcher=/nonexistent/elasticrun agent_bundle={AGENT_BUNDLE} "
                   "token_key=@TOKEN_KEY@\n"
                   f"required {STANDIN_SO}\n")
        conf.close()
        cls.plugstack = conf.name
        cls.addClassCleanup(os.unlink, conf.name)
        super().setUpClass()

    def srun(self, args):
        # The image's torch 2.x (Debian's) has no libuv; workers bind gloo to eth0.
        env = {"GLOO_SOCKET_IFNAME": "eth0", "ELASTIC_TORCH_NO_LIBUV": "1"}
        return self.cluster.srun(["-N2", f"--container-image={IMAGE}", f"--container-mounts={REPO}:{REPO}",
                                  f"--container-workdir={REPO}", *args], timeout=TIMEOUT, env=env)

    def test_worker_contract_and_a_restart_inside_the_image(self):
        r = self.srun(["--elastic=2", "--gpus-per-node=2", "--elastic-max-restarts=1",
                       "/usr/bin/python3", WORKER, "--fail-once-rank=1"])
        text = assert_contract_after_one_restart(self, r)
        # No munge socket in the image: the agents use the step's token, not nothing.
        self.assertIn("(auth token)", text)
        self.assertNotIn("NOT authenticated", text)
        # The workers ran the image's python and glibc.
        probe = self.srun(["--elastic=2", "--elastic-nproc-per-node=1", "/usr/bin/python3", "-c",
                           "import os, platform; print('IMAGE', platform.libc_ver()[1], "
                           "os.environ.get('LD_LIBRARY_PATH', '-'), os.path.exists('/run/munge')); "
                           "print('TOKEN', sorted(k for k in os.environ if 'TOKEN' in k), "
                           "[os.readlink(p) for p in ['/proc/self/fd/' + f for f in os.listdir('/proc/self/fd')] "
                           "if os.path.lexists(p)])"])
        self.assertEqual(probe.returncode, 0, probe.stdout + probe.stderr)
        want = (IMAGE / "etc/debian_version").read_text().strip()
        found = re.findall(r"IMAGE (\S+) (\S+) (\S+)", probe.stdout)
        self.assertEqual(len(found), 2, probe.stdout)
        for glibc, ld_path, munge in found:
            self.assertNotEqual(glibc, os.confstr("CS_GNU_LIBC_VERSION").split()[1], want)
            self.assertEqual((ld_path, munge), ("-", "False"))
        # The token reached the agents only: no worker has its variable or its memfd.
        tokens = re.findall(r"TOKEN (\[.*?\]) (\[.*\])", probe.stdout)
        self.assertEqual(len(tokens), 2, probe.stdout)
        for names, fds in tokens:
            self.assertEqual(names, "[]")
            self.assertNotIn("elastic-rdzv-token", fds)

    def test_a_stranger_without_the_token_is_refused(self):
        """While the step runs, an agent without the token (root on a node of the
        cluster, munge at hand) tries to join the step's run: refused; the step
        trains at its own size and ends 0."""
        env = {"GLOO_SOCKET_IFNAME": "eth0", "ELASTIC_TORCH_NO_LIBUV": "1"}
        with tempfile.NamedTemporaryFile("w+", suffix=".err") as err:
            step = self.cluster.popen(["srun", "-N2", f"--container-image={IMAGE}",
                                       f"--container-mounts={REPO}:{REPO}", f"--container-workdir={REPO}",
                                       "--elastic=2:3", "--elastic-nproc-per-node=1",
                                       "/usr/bin/python3", WORKER, "--seconds=25"],
                                      env=env, stderr=err)
            try:
                found = None
                for _ in range(600):
                    found = re.search(r"port (\d+) \(auth (\w+)\), run (\S+),", Path(err.name).read_text())
                    if found or step.poll() is not None:
                        break
                    time.sleep(0.1)
                self.assertIsNotNone(found, Path(err.name).read_text())
                port, auth, run = found.groups()
                self.assertEqual(auth, "token")
                stranger = self.cluster.node_run("n2", [
                    ELASTICRUN, "--nnodes=1:3", "--nproc-per-node=1", "--rdzv-backend=c10d",
                    f"--rdzv-endpoint=10.200.0.11:{port}", f"--rdzv-id={run}", "--no-python", "/bin/true"])
                self.assertNotEqual(stranger.returncode, 0, stranger.stdout + stranger.stderr)
                self.assertRegex(stranger.stdout + stranger.stderr, r"authentication|token")
                out, _ = step.communicate(timeout=TIMEOUT)
            finally:
                if step.poll() is None:
                    step.kill()
                    step.wait()
            text = out + Path(err.name).read_text()
        self.assertEqual(step.returncode, 0, text)
        done = records(out, "DONE")
        self.assertEqual(sorted(int(d["rank"]) for d in done), [0, 1], text)

    def test_usr1_and_the_first_nodes_loss_inside_the_image_then_nothing_left(self):
        """Issue 23 item 4 in the image: `scancel --signal=USR1` reaches every worker and
        training goes on; then the first node (the rendezvous host and the store, its agent
        run from the bundle) is lost with --no-kill: n2's agent, in the image too, takes
        over and n2 and n3 finish; nothing of the step is left on them."""
        env = {"GLOO_SOCKET_IFNAME": "eth0", "ELASTIC_TORCH_NO_LIBUV": "1", "PET_SHUTDOWN_TIMEOUT": "10"}
        bg = Background(self.cluster, ["-N3", "--no-kill", f"--container-image={IMAGE}",
                                       f"--container-mounts={REPO}:{REPO}", f"--container-workdir={REPO}",
                                       "--elastic=2:3", "--gpus-per-node=1", "--elastic-max-restarts=2",
                                       "/usr/bin/python3", WORKER, "--seconds=12"], env=env)
        try:
            usr1_then_lose_the_first_node(self, bg)
        finally:
            if bg.proc.poll() is None:
                bg.proc.kill()
            test_spank_e2e.TestSpankEndToEnd.restore_node(self, "n1")
        text = bg.text()
        self.assertIn("taking over as the host", text)
        self.assertIn("(auth token)", text)
        self.assertEqual(sorted((d["rank"], d["world"]) for d in records(text, "DONE")), [("0", "2"), ("1", "2")],
                         text)
        self.assert_nothing_left()

    def test_scontrol_and_the_health_check_run_on_the_host_for_agents_in_the_image(self):
        """The plugin's host runner (launcher/host_runner.h) runs the node's side programs
        for agents in the image: side_programs_run_on_the_host."""
        side_programs_run_on_the_host(self, IMAGE, WORKER, self.srun)

    def test_a_program_the_image_lacks_is_named_on_every_node_and_no_node_is_drained(self):
        """Bad input in the image (issue 23): a python the image does not have. Each
        node's agent, in the image, names the program; the step fails; the nodes stay
        usable (a user's mistake never drains a node)."""
        r = self.srun(["--elastic=2", "--elastic-nproc-per-node=1", "/usr/bin/python3.99", WORKER])
        text = r.stdout + r.stderr
        print(f"a python the image lacks:\n{text}", file=sys.stderr)
        self.assertNotEqual(r.returncode, 0, text)
        self.assertEqual(text.count("cannot execute '/usr/bin/python3.99': not an executable file: No such file or "
                                    "directory (on this node; in a container: in its image)"), 2, text)
        self.assertNotIn("READY", text)
        states = self.cluster.node_states()
        self.assertTrue(all(not state.startswith(("drain", "down")) for state in states.values()), states)
        self.assert_nothing_left()

    def test_an_image_without_torch_is_named_on_every_node_before_any_worker(self):
        """Bad input in the image (issue 23): the image has python but not torch, and the
        script imports it. Each node's agent, in the image, asks the image's python before
        the rendezvous: one message per node naming it, exit 2 (no restart burnt, no
        requeue), no worker started, no node drained, nothing left."""
        top = Path(tempfile.mkdtemp(prefix="elastic-no-torch-"))
        self.addCleanup(shutil.rmtree, top, ignore_errors=True)
        image = image_without_torch(self, IMAGE, top)
        env = {"GLOO_SOCKET_IFNAME": "eth0", "ELASTIC_TORCH_NO_LIBUV": "1"}
        r = self.cluster.srun(["-N2", f"--container-image={image}", f"--container-mounts={REPO}:{REPO}",
                               f"--container-workdir={REPO}", "--elastic=2", "--elastic-nproc-per-node=1",
                               "--elastic-max-restarts=3", "/usr/bin/python3", TRAIN], timeout=TIMEOUT, env=env)
        text = r.stdout + r.stderr
        self.assertEqual(r.returncode, 2, text)
        self.assertEqual(text.count("the interpreter '/usr/bin/python3' cannot import torch"), 2, text)
        self.assertNotRegex(text, r"\[rank\d+\]:")  # no worker started: not one line of one
        self.assertNotIn("round 0", text)
        states = self.cluster.node_states()
        self.assertTrue(all(not state.startswith(("drain", "down")) for state in states.values()), states)
        self.assert_nothing_left()

    def test_apptainer_exec_as_the_program_runs_each_worker_in_the_image(self):
        """`srun --elastic apptainer exec IMAGE python3 train.py` (docs/containers.md,
        "Apptainer"): elasticrun runs on the node and each worker is one `apptainer exec`
        of the image, here its stand-in (apptainer_standin.sh; Debian packages no
        apptainer). Rank 1 fails once: after the restart all four workers have the
        contract, and they ran the image's python and glibc."""
        env = {"GLOO_SOCKET_IFNAME": "eth0", "ELASTIC_TORCH_NO_LIBUV": "1"}
        run = ["-N2", f"--chdir={REPO}", "--elastic=2"]
        r = self.cluster.srun([*run, "--gpus-per-node=2", "--elastic-max-restarts=1", APPTAINER, "exec", "--nv",
                               str(IMAGE), "/usr/bin/python3", WORKER, "--fail-once-rank=1"], timeout=TIMEOUT, env=env)
        assert_contract_after_one_restart(self, r)
        probe = self.cluster.srun([*run, "--elastic-nproc-per-node=1", APPTAINER, "exec", str(IMAGE), "/usr/bin/python3",
                                   "-c", "import platform; print('IMAGE', platform.libc_ver()[1])"],
                                  timeout=TIMEOUT, env=env)
        self.assertEqual(probe.returncode, 0, probe.stdout + probe.stderr)
        glibcs = re.findall(r"IMAGE (\S+)", probe.stdout)
        self.assertEqual(len(glibcs), 2, probe.stdout)
        self.assertNotIn(os.confstr("CS_GNU_LIBC_VERSION").split()[1], glibcs, probe.stdout)
        self.assert_nothing_left()


if __name__ == "__main__":
    cluster_main()
