#!/usr/bin/env python3
"""`cpack -G DEB` from the build tree makes a package an admin can install:
the right files in the right places, Slurm pinned to the major.minor the plugin
was built for, and programs that name their version and Slurm's."""
import os
import re
import subprocess
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import debpkg  # noqa: E402


class PackageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = debpkg.tmpdir("elastic-deb-")
        cls.out = Path(cls._tmp.name)
        cls.deb = debpkg.build_deb(cls.out)
        cls.files = debpkg.contents(cls.deb)
        cls.root = cls.out / "root"
        subprocess.run(["dpkg-deb", "-x", str(cls.deb), str(cls.root)], check=True)

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def test_control_fields(self):
        self.assertEqual(debpkg.field(self.deb, "Package"), "slurm-elastic")
        self.assertEqual(debpkg.field(self.deb, "Version"), debpkg.env("ELASTIC_VERSION"))

    def test_depends_pin_slurm_major_minor(self):
        depends = debpkg.field(self.deb, "Depends")
        major, minor = debpkg.env("ELASTIC_SLURM_VERSION").split(".")[:2]
        pkg = debpkg.env("ELASTIC_DEB_SLURM_PACKAGE")
        nxt = f"{major}.{int(minor) + 1:02d}"
        self.assertIn(f"{pkg} (>= {major}.{minor})", depends)
        self.assertIn(f"{pkg} (<< {nxt})", depends)
        # The package satisfies its Slurm pin on this machine (it was built here).
        have = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True,
                              text=True).stdout
        self.assertTrue(have.startswith(f"{major}.{minor}"), f"{pkg} {have}")
        # Shared libraries from dpkg-shlibdeps.
        for lib in ("libfmt", "libhwloc", "libc6"):
            self.assertIn(lib, depends)
        # libcrypto is dlopen()ed (token authentication): named by hand.
        self.assertIn("libssl3", depends)

    def test_files_in_place(self):
        bindir = debpkg.env("ELASTIC_BINDIR")
        plugin_dir = debpkg.env("ELASTIC_PLUGIN_DIR")
        mandir = debpkg.env("ELASTIC_MANDIR")
        expected = [
            f"{bindir}/elasticrun",
            f"{plugin_dir}/spank_elastic.so",
            "/etc/slurm/plugstack.conf.d/elastic.conf.example",
            f"{mandir}/man1/elasticrun.1",
            f"{mandir}/man8/spank_elastic.8",
        ]
        for path in expected:
            self.assertIn(path, self.files)
        self.assertTrue(any(p.endswith("/doc/slurm-elastic/examples/cli_filter.lua") for p in self.files))
        for doc in ("README.md", "user.md", "admin.md", "design.md"):
            self.assertTrue(any(p.endswith(f"/doc/slurm-elastic/{doc}") for p in self.files), doc)
        # One plugin, where Slurm looks for plugins; no test or build-tree binaries.
        plugins = [p for p in self.files if p.endswith("spank_elastic.so")]
        self.assertEqual(plugins, [f"{plugin_dir}/spank_elastic.so"])
        for p in self.files:
            self.assertNotRegex(p, r"(_tests|_fuzz|_bench)$")

    def test_plugstack_snippet_is_not_enabled_and_points_at_installed_plugin(self):
        # Debian's plugstack.conf includes plugstack.conf.d/*.conf: .example is inert.
        self.assertFalse(any(p.startswith("/etc/slurm/plugstack.conf.d/") and p.endswith(".conf")
                             for p in self.files))
        snippet = (self.root / "etc/slurm/plugstack.conf.d/elastic.conf.example").read_text()
        active = [l for l in snippet.splitlines() if l.strip() and not l.lstrip().startswith("#")]
        plugin_dir = debpkg.env("ELASTIC_PLUGIN_DIR")
        self.assertEqual(active, [f"optional {plugin_dir}/spank_elastic.so"])

    def test_elasticrun_names_version_and_slurm(self):
        exe = self.root / debpkg.env("ELASTIC_BINDIR").lstrip("/") / "elasticrun"
        out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn(debpkg.env("ELASTIC_VERSION"), out.stdout)
        self.assertIn(debpkg.env("ELASTIC_SLURM_VERSION"), out.stdout)

    def test_plugin_load_line_names_version_and_slurm(self):
        so = self.root / debpkg.env("ELASTIC_PLUGIN_DIR").lstrip("/") / "spank_elastic.so"
        data = so.read_bytes()
        for what in ("ELASTIC_SLURM_VERSION", "ELASTIC_VERSION"):
            value = debpkg.env(what)
            self.assertTrue(value.encode() in data,
                            f"{so.name} has no string {value!r} ({what}): its load line cannot name it "
                            "(include elastic_version.h, ELASTIC_VERSION_LINE)")

    def test_man_pages(self):
        mandir = self.root / debpkg.env("ELASTIC_MANDIR").lstrip("/")
        man1 = (mandir / "man1/elasticrun.1").read_text()
        self.assertIn(".TH ELASTICRUN", man1)
        self.assertIn("nproc", man1)  # generated from --help
        man8 = (mandir / "man8/spank_elastic.8").read_text()
        self.assertNotIn("@", re.sub(r"<[^>]*@[^>]*>", "", man8))  # every @VAR@ substituted


if __name__ == "__main__":
    unittest.main(verbosity=2)
