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
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE.parent / "cluster"))
sys.path.insert(0, str(HERE.parent / "spank"))
from cluster import ClusterTestCase, main as cluster_main  # noqa: E402
from test_spank_e2e import records  # noqa: E402

SPANK_SO = os.environ.get("SPANK_SO", str(REPO / "build/spank_plugin/spank_elastic.so"))
AGENT_BUNDLE = os.environ.get("AGENT_BUNDLE", str(REPO / "build/agent-bundle"))
STANDIN_SO = os.environ.get("PYXIS_STANDIN_SO", str(REPO / "build/tests/containers/pyxis_standin.so"))
ROOTS = Path("/var/cache/slurm-elastic/roots")
# Inside a root of the matrix, scripts/in-root.sh shows the other roots here (read-only).
IMAGES = Path("/var/cache/slurm-elastic/images")
WORKER = str(REPO / "tests/spank/worker.py")
TIMEOUT = 300


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


# (This decorator once sat on the helper above, which then skipped every test that used it
# where no image was found: the OCI contract test inside the Debian 13 and unstable roots.)
@unittest.skipIf(IMAGE is None, f"no rootfs of another Debian release in {ROOTS} or {IMAGES} "
                 "(scripts/make-root.sh)")
class TestPyxisStandin(ClusterTestCase):
    nodes = 2

    @classmethod
    def setUpClass(cls):
        conf = tempfile.NamedTemporaryFile("w", suffix=".plugstack.conf", delete=False)
        # Ours first, then the container plugin (docs/containers.md).
        conf.write(f"required {SPANK_SO} launcher=/nonexistent/elasticrun agent_bundle={AGENT_BUNDLE}\n"
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
        assert_contract_after_one_restart(self, r)
        # The workers ran the image's python and glibc.
        probe = self.srun(["--elastic=2", "--elastic-nproc-per-node=1", "/usr/bin/python3", "-c",
                           "import os, platform; print('IMAGE', platform.libc_ver()[1], "
                           "os.environ.get('LD_LIBRARY_PATH', '-'), os.path.exists('/run/munge'))"])
        self.assertEqual(probe.returncode, 0, probe.stdout + probe.stderr)
        want = (IMAGE / "etc/debian_version").read_text().strip()
        found = re.findall(r"IMAGE (\S+) (\S+) (\S+)", probe.stdout)
        self.assertEqual(len(found), 2, probe.stdout)
        for glibc, ld_path, munge in found:
            self.assertNotEqual(glibc, os.confstr("CS_GNU_LIBC_VERSION").split()[1], want)
            self.assertEqual((ld_path, munge), ("-", "False"))


if __name__ == "__main__":
    cluster_main()
