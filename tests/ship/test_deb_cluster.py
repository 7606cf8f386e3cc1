#!/usr/bin/python3
"""ship.deb_on_cluster: the .deb an admin installs, used through real srun.

Builds the .deb from the build tree (cpack), installs it on this machine with
dpkg (the test cluster's nodes are namespaces of this machine: they see the
installed files), enables the plugstack.conf.d snippet exactly as installed
(with `required`, so a plugin that fails to load fails the test), runs
`srun --elastic` and checks that the agents are the installed elasticrun, not
the build tree's. The package is removed afterwards, whatever happened.
Needs root; skipped when slurm-elastic is already installed (never clobbers a
real installation).
"""
import os
import re
import subprocess
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "cluster"))
import debpkg  # noqa: E402
from cluster import Cluster  # noqa: E402

PKG = "slurm-elastic"
# Holds the version this test installs; written before `dpkg -i`, removed after
# `dpkg --purge`: an installation of that version that the test could not undo
# (killed by a timeout) is ours to remove next time.
MARKER = Path("/var/lib/slurm-elastic-test-installed")


def installed() -> bool:
    """Anything of the package on this machine: installed, or left half-installed
    or half-configured by a failed `dpkg -i`."""
    r = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Status}", PKG], capture_output=True, text=True)
    return r.returncode == 0 and r.stdout.strip() not in ("", "not-installed", "config-files")


def installed_version() -> str:
    r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", PKG], capture_output=True, text=True)
    return r.stdout.strip()


class DebOnCluster(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("installing a .deb and the test cluster need root")
        if installed() and MARKER.exists() and MARKER.read_text().strip() == installed_version():
            cls.uninstall()  # left by an earlier run of this test that was killed
        if installed():
            raise unittest.SkipTest(f"{PKG} is already installed on this machine; not touching it")
        cls._tmp = debpkg.tmpdir("elastic-deb-")
        cls.addClassCleanup(cls._tmp.cleanup)
        cls.deb = debpkg.build_deb(Path(cls._tmp.name))
        cls.addClassCleanup(cls.uninstall)
        MARKER.write_text(debpkg.field(cls.deb, "Version") + "\n")  # the version this test installs
        r = subprocess.run(["dpkg", "-i", str(cls.deb)], capture_output=True, text=True, timeout=120,
                           env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        if r.returncode != 0:
            raise AssertionError(f"dpkg -i failed:\n{r.stdout}\n{r.stderr}")
        snippet = Path("/etc/slurm/plugstack.conf.d/elastic.conf.example").read_text()
        lines = [l for l in snippet.splitlines() if l.strip() and not l.lstrip().startswith("#")]
        assert len(lines) == 1 and lines[0].startswith("optional "), lines
        cls.plugin = lines[0].split()[1]
        cls.plugstack = Path(cls._tmp.name) / "plugstack.conf"
        cls.plugstack.write_text("required " + lines[0].split(None, 1)[1] + "\n")
        cls.cluster = Cluster(nodes=2, plugstack=cls.plugstack)
        cls.addClassCleanup(cls.cluster.down)
        cls.cluster.up()

    @classmethod
    def uninstall(cls):
        if installed():
            subprocess.run(["dpkg", "--purge", PKG], capture_output=True, timeout=120)
        assert not installed(), f"{PKG} is still installed"
        MARKER.unlink(missing_ok=True)

    def test_installed_files(self):
        bindir = debpkg.env("ELASTIC_BINDIR")
        self.assertTrue(os.access(f"{bindir}/elasticrun", os.X_OK))
        self.assertEqual(self.plugin, f"{debpkg.env('ELASTIC_PLUGIN_DIR')}/spank_elastic.so")
        self.assertTrue(Path(self.plugin).is_file())
        r = subprocess.run(["man", "-w", "elasticrun"], capture_output=True, text=True)
        if r.returncode == 0:  # man-db present
            self.assertIn("elasticrun.1", r.stdout)

    def test_srun_help_from_installed_plugin(self):
        r = self.cluster.run(["srun", "--help"], timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("[elastic]", r.stdout)
        self.assertRegex(r.stdout, r"--elastic\b")

    def test_srun_elastic_runs_installed_elasticrun(self):
        # Each worker prints its node, its rank and world size, and the program
        # of its parent: the agent that started it.
        worker = ('echo "W $SLURMD_NODENAME $RANK $WORLD_SIZE $GROUP_RANK '
                  '$(readlink /proc/$PPID/exe)"')
        r = self.cluster.srun(["-N2", "--elastic", "--elastic-nproc-per-node=2", "/bin/sh", "-c", worker],
                              timeout=180)
        self.assertEqual(r.returncode, 0, f"{r.stdout}\n{r.stderr}")
        rows = sorted(m.groups() for m in re.finditer(
            r"W (\S+) (\d+) (\d+) (\d+) (\S+)", r.stdout))
        self.assertEqual(len(rows), 4, r.stdout)
        self.assertEqual(sorted(int(rank) for _, rank, _, _, _ in rows), [0, 1, 2, 3])
        self.assertEqual({ws for _, _, ws, _, _ in rows}, {"4"})
        self.assertEqual({node for node, *_ in rows}, {"n1", "n2"})
        agents = {exe for *_, exe in rows}
        self.assertEqual(agents, {f"{debpkg.env('ELASTIC_BINDIR')}/elasticrun"}, r.stdout)

    def test_plugin_names_its_version_and_slurm(self):
        r = self.cluster.srun(["-v", "-N1", "--elastic", "/bin/true"], timeout=120)
        text = r.stderr + r.stdout + self.cluster.logs()
        want = debpkg.env("ELASTIC_SLURM_VERSION")
        lines = [l for l in text.splitlines()
                 if "elastic" in l and debpkg.env("ELASTIC_VERSION") in l and want in l]
        self.assertTrue(lines, f"no log line names slurm-elastic's version and Slurm {want}:\n"
                               f"{r.stderr[-2000:]}")


if __name__ == "__main__":
    unittest.main(verbosity=2)
