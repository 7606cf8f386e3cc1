"""elasticrun with real PyTorch (Debian's torch 1.13 under /usr/bin/python3):
examples/train.py, DDP over gloo on CPU."""
import os
import re
import unittest

from launcher_test_util import PYTHON, LauncherTestCase

TRAIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../examples/train.py")


class TorchTest(LauncherTestCase):
    def agent(self, *args):
        return ["--standalone", "--python", PYTHON] + list(args)

    def test_train_four_workers_all_reduce_is_correct(self):
        rc, out, err = self.run_agent(self.agent("--nproc-per-node=4", TRAIN, "--steps=3"))
        self.assertEqual(rc, 0, err)
        for rank in range(4):
            self.assertRegex(out, r"\[rank%d\]: rank %d/4 restart 0: all_reduce sum of ranks = 6 "
                                  r"\(expected 6\) OK" % (rank, rank))
        self.assert_nothing_left()

    def test_worker_failing_once_is_restarted(self):
        rc, out, err = self.run_agent(self.agent("--nproc-per-node=2", "--max-restarts=1", TRAIN,
                                                 "--fail-once-rank=1", "--steps=1"))
        self.assertEqual(rc, 0, err)
        self.assertIn("[rank1]: rank 1: failing on purpose", out)
        self.assertIn("[rank1]: rank 1/2 restart 1: all_reduce sum of ranks = 1 (expected 1) OK", out)
        self.assert_nothing_left()

    @unittest.skipUnless(os.environ.get("ELASTIC_TORCH_NO_LIBUV") == "1",
                         "this torch has libuv (scripts/torch_has_libuv.py): nothing to work around")
    def test_torch_without_libuv_needs_elastic_torch_no_libuv(self):
        # Debian's torch 2.x: without the variable the workers cannot reach the
        # agent's store; with it (what docs/user.md tells its users) they train.
        args = self.agent("--nproc-per-node=2", TRAIN, "--steps=1")
        rc, out, err = self.run_agent(args, env={"ELASTIC_TORCH_NO_LIBUV": ""})
        self.assertNotEqual(rc, 0, out)
        # 2.6: "was build without", 2.14: "was built without libuv support".
        self.assertRegex(out + err, r"use_libuv was requested but PyTorch was buil[dt] without libuv support")
        rc, out, err = self.run_agent(args, env={"ELASTIC_TORCH_NO_LIBUV": "1"})
        self.assertEqual(rc, 0, err)
        self.assertIn("[rank1]: rank 1/2 restart 0: all_reduce sum of ranks = 1 (expected 1) OK", out)
        self.assert_nothing_left()

    def test_record_traceback_in_summary(self):
        rc, out, err = self.run_agent(self.agent("--nproc-per-node=2", TRAIN, "--raise-rank=1"))
        self.assertEqual(rc, 1, err)
        self.assertIn("job failed: first failure: rank 1 (local rank 1)", err)
        self.assertIn("message:       RuntimeError: rank 1 raised on purpose", err)
        self.assertIn("traceback:", err)
        self.assertRegex(err, r"    Traceback \(most recent call last\):")
        self.assertRegex(err, re.compile(r"    .*train\.py.*in main", re.S))
        self.assert_nothing_left()


class PreloadTorchTest(TorchTest):
    """The same, every worker forked from one interpreter that imported torch
    (elasticrun --preload torch): nothing warns, everything else is the same."""

    def agent(self, *args):
        return ["--preload", "torch"] + super().agent(*args)

    def run_agent(self, args, env=None, **kw):
        rc, out, err = super().run_agent(args, env, **kw)
        self.assertNotIn("preloaded interpreter", err)  # no fallback warning
        self.assertNotIn("--preload:", err)
        return rc, out, err


if __name__ == "__main__":
    unittest.main()
