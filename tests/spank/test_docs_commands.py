#!/usr/bin/python3
"""spank.docs_commands: every shell command README.md, docs/user.md and
docs/admin.md show runs through real Slurm (srun, sbatch, salloc) on the test
cluster, so the documentation cannot drift from what works.

The commands are read from the documents at test time (their ```sh blocks);
only node and GPU counts are adapted (at most 2 nodes, 1 GPU per node: a cheap
run) and the user's `train.py` is a tiny DDP program that accepts any argument.
A block that is not run (building, installing: other suites cover them) is
listed in NOT_RUN with why; a block that is neither run nor listed fails
test_every_block_is_run_or_listed. Blocks of one kind share one allocation.

Environment: SPANK_SO, ELASTICRUN (the built binaries).
"""

import os
import re
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent / "cluster"))
from cluster import ClusterTestCase, main as cluster_main  # noqa: E402

SPANK_SO = os.environ.get("SPANK_SO", str(ROOT / "build/spank_plugin/spank_elastic.so"))
ELASTICRUN = os.environ.get("ELASTICRUN", str(ROOT / "build/launcher/elasticrun"))
DOCS = ("README.md", "docs/user.md", "docs/admin.md")
MAX_NODES = 2  # each run starts torch on every node: 2 keeps the whole file to minutes
TIMEOUT = float(os.environ.get("SPANK_E2E_TIMEOUT", "300"))

# Blocks not run here: (a regex their text matches, why). Each must match a block.
NOT_RUN = [
    (r"^scripts/demo\.sh", "the repository's own scripts (they build and start their own cluster)"),
    (r"^cmake -S \. -B build +# RelWithDebInfo", "building one component (the build itself is every suite's)"),
    (r"cpack -G DEB", "packaging: ship.package_contents and ship.deb_on_cluster"),
    (r"^scripts/install-deps\.sh", "installing from source: ship.packager_build_without_tests"),
    (r"^cp /etc/slurm/plugstack\.conf\.d", "enabling the plugin as root: ship.deb_on_cluster"),
    (r"^# slurm\.conf", "the cli_filter as root: ship.cli_filter_lua"),
    (r"^fuzz/run\.sh", "fuzzing for minutes: the fuzz_* tests run each target briefly"),
    (r"^rm -f /etc/slurm", "uninstalling as root"),
    (r"srun torchrun", "the torchrun recipe the migration replaces (srun refuses torchrun under --elastic)"),
    (r"--relative=2", "scale-up needs 4 nodes and minutes (sleep 600)"),
    (r"host1:29400", "one command per machine outside Slurm (host1 is the reader's)"),
    (r"--health-check='nvidia-smi", "needs nvidia-smi and /scratch on every machine; the option: "
     "spank.e2e test_health_check_failing_on_one_node_keeps_it_out"),
]

# Lines of a run block left out: (regex, why).
LINES_NOT_RUN = [
    (r"\s\.\.\.\s*(#|$)", "a fragment ('...' stands for the rest)"),
    (r"\bJOBID\b", "a placeholder for the reader's job id"),
]

# The user's program: what docs call train.py (and mypkg.train): DDP over gloo,
# one all_reduce, any arguments accepted.
TRAIN = '''\
import os, sys
import torch
import torch.distributed as dist
dist.init_process_group("gloo")
t = torch.tensor([1.0])
dist.all_reduce(t)
print(f"DOCS-OK rank={os.environ['RANK']} world={os.environ['WORLD_SIZE']} sum={t.item():g}", flush=True)
'''


def shell_blocks():
    """[(doc, line, text)] of every ```sh / ```bash block."""
    out = []
    for doc in DOCS:
        text = (ROOT / doc).read_text()
        for m in re.finditer(r"^```(sh|bash|shell)\n(.*?)^```", text, re.S | re.M):
            out.append((doc, text[:m.start()].count("\n") + 1, m.group(2)))
    return out


def not_run_reason(block):
    for pattern, why in NOT_RUN:
        if re.search(pattern, block, re.M):
            return why
    return None


def is_batch(block):
    first = block.lstrip().splitlines()[0]
    return first.startswith(("#!", "#SBATCH"))


def cap(n):
    return str(min(int(n), MAX_NODES))


def adapt(block):
    """Node counts at most MAX_NODES, one GPU per node, a short --signal lead; a
    fragment or placeholder line becomes a comment; the rest as written."""
    block = re.sub(r"(?<=-N)(\d+)(?:-(\d+))?",
                   lambda m: cap(m.group(1)) + (f"-{cap(m.group(2))}" if m.group(2) else ""), block)
    block = re.sub(r"(?<=--elastic=)(\d+):(\d+)", lambda m: f"{cap(m.group(1))}:{cap(m.group(2))}", block)
    block = re.sub(r"--gpus-per-node=\d+", "--gpus-per-node=1", block)
    block = re.sub(r"--signal=USR1@\d+", "--signal=USR1@5", block)
    lines = []
    for line in block.splitlines():
        # The test cluster's nodes reach each other over eth0 (GLOO_SOCKET_IFNAME),
        # the hub where srun and a standalone elasticrun run has loopback only.
        if line.startswith("elasticrun --standalone"):
            line = "GLOO_SOCKET_IFNAME=lo " + line
        for pattern, why in LINES_NOT_RUN:
            if re.search(pattern, line):
                line = f"# not run: {why}"
        lines.append(line)
    block = "\n".join(lines) + "\n"
    if block.startswith("#SBATCH"):
        block = "#!/bin/sh\n" + block  # sbatch wants an interpreter line
    return block


class TestDocsBlocks(unittest.TestCase):
    """Without a cluster: what is read from the documents."""

    def test_every_block_is_run_or_listed(self):
        blocks = shell_blocks()
        self.assertGreater(len(blocks), 10)
        for pattern, why in NOT_RUN:
            self.assertTrue(any(re.search(pattern, b, re.M) for _, _, b in blocks),
                            f"NOT_RUN entry matches no block any more: {pattern} ({why})")
        runnable = [b for _, _, b in blocks if not_run_reason(b) is None]
        for block in runnable:
            self.assertRegex(block, r"(?m)^\s*(srun|elasticrun|#SBATCH|export)\b", block)

    def test_adapt_caps_nodes_and_gpus_only(self):
        self.assertEqual(adapt("srun -N2-8 --no-kill --elastic=2:8 --gpus-per-node=8 train.py"),
                         "srun -N2-2 --no-kill --elastic=2:2 --gpus-per-node=1 train.py\n")
        self.assertEqual(adapt("scancel --signal=USR1 JOBID  # by hand"),
                         "# not run: a placeholder for the reader's job id\n")
        self.assertEqual(adapt("srun --elastic --elastic-max-restarts=3 train.py --lr 0.1"),
                         "srun --elastic --elastic-max-restarts=3 train.py --lr 0.1\n")
        self.assertEqual(adapt("#SBATCH -N8 --gpus-per-node=8 --no-kill\n#SBATCH --elastic=4:8"),
                         "#!/bin/sh\n#SBATCH -N2 --gpus-per-node=1 --no-kill\n#SBATCH --elastic=2:2\n")


class TestDocsCommands(ClusterTestCase):
    nodes = MAX_NODES
    plugin = SPANK_SO
    plugin_args = [f"launcher={ELASTICRUN}"]

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # The reader's working directory: train.py, a package, the examples; HOME too.
        cls.work = Path(tempfile.mkdtemp(prefix="docs-", dir=cls.cluster.dir))
        (cls.work / "train.py").write_text(TRAIN)
        (cls.work / "mypkg").mkdir()
        (cls.work / "mypkg" / "__init__.py").write_text("")
        (cls.work / "mypkg" / "train.py").write_text(TRAIN)
        os.symlink(ROOT / "examples", cls.work / "examples")
        os.chmod(cls.work, 0o755)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)
        super().tearDownClass()

    def env(self):
        # elasticrun as if installed; the system's python3 (the one with torch), not
        # whatever the caller's PATH puts first.
        path = f"{Path(ELASTICRUN).resolve().parent}:/usr/local/bin:/usr/bin:/bin"
        return {"HOME": str(self.work), "GLOO_SOCKET_IFNAME": "eth0", "PATH": path}

    def run_blocks(self, batch):
        ran = 0
        for doc, line, block in shell_blocks():
            if not_run_reason(block) is not None or is_batch(block) != batch:
                continue
            script = adapt(block)
            with self.subTest(doc=f"{doc}:{line}"):
                if batch:
                    rc, job, out = self.cluster.sbatch(script, args=[f"--chdir={self.work}"],
                                                       timeout=TIMEOUT, env=self.env())
                    self.assertEqual(rc, 0, f"{doc}:{line}\n{script}\n{out}")
                else:
                    # A plain block runs as the reader would inside a job (its sruns
                    # see the allocation, as after `salloc -N3 --no-kill`).
                    path = self.work / f"block-{line}.sh"
                    path.write_text("set -e\n" + script)
                    r = self.cluster.run(["salloc", f"-N{MAX_NODES}", "--no-kill", "--gpus-per-node=1",
                                          "bash", str(path)],
                                         timeout=TIMEOUT, env=self.env(), cwd=self.work)
                    out = r.stdout + r.stderr
                    self.assertEqual(r.returncode, 0, f"{doc}:{line}\n{script}\n{out}")
                if re.search(r"\btrain\.py\b|mypkg\.train", script):
                    self.assertIn("DOCS-OK", out, f"{doc}:{line}\n{script}\n{out}")
                    self.assertNotIn("sum=0", out)
                ran += 1
        return ran

    def test_plain_blocks(self):
        self.assertGreater(self.run_blocks(batch=False), 3)

    def test_batch_scripts(self):
        self.assertGreater(self.run_blocks(batch=True), 2)


if __name__ == "__main__":
    cluster_main()
