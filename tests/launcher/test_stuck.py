"""A worker stuck in uninterruptible sleep (state D) that SIGKILL cannot end (issue 19
"Beyond the peers", issue 22: torchrun's TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT).

The worker hangs on a FUSE filesystem that never answers (hung_fs.py: a real hung
filesystem, as a dead NFS server makes one; root only). The agent must report it (pid,
rank, state D, wchan) --uninterruptible-timeout after SIGKILL and leave the job with exit
4 instead of waiting forever; on two nodes the other one goes on without it."""
import glob
import json
import os
import socket
import subprocess
import time
import unittest

from launcher_test_util import ELASTICRUN, PYTHON, WORKER, LauncherTestCase

HUNG_FS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hung_fs.py")
RELEASE_AFTER_S = 60  # the filesystem answers (fails) then: a hanging agent fails the test


@unittest.skipUnless(os.geteuid() == 0 and os.path.exists("/dev/fuse"), "needs root and /dev/fuse")
class StuckWorkerTest(LauncherTestCase):
    def hung(self, args, env=None, timeout=("--uninterruptible-timeout=2",)):
        """elasticrun ARGS on a node whose local rank 0 hangs on a hung filesystem."""
        mount = self.path("mnt")
        os.mkdir(mount)
        argv = ([PYTHON, HUNG_FS, mount, self.dir, str(RELEASE_AFTER_S), "--", ELASTICRUN] + args
                + ["--shutdown-timeout=1"] + list(timeout) + [PYTHON, WORKER, "hang-fs", mount, self.dir])
        env = dict(os.environ, HUNG_FS_NODE="1", **(env or {}))
        env.pop("OMP_NUM_THREADS", None)
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                start_new_session=True)
        self.groups.append(proc.pid)
        return proc

    def finish(self, proc):
        start = time.monotonic()
        out, err = proc.communicate(timeout=RELEASE_AFTER_S + 60)
        with open(self.path("left.json")) as f:
            left = json.load(f)
        return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"), left, start

    def assert_reported(self, err, left):
        stuck = glob.glob(self.path("stuck.*"))  # stuck.RANK: its global rank
        self.assertEqual(len(stuck), 1, stuck)
        with open(stuck[0]) as f:
            pid = int(f.read())
        self.assertTrue(left["command_exited"], "elasticrun still waited for its stuck worker:\n" + err)
        self.assertEqual(left["left"].get(str(pid)), "D", left)  # still stuck after the agent left
        self.assertRegex(err, r"local rank 0 \(rank \d+, pid %d\) is in uninterruptible sleep \(state D, "
                              r"wchan \w+\) 2 s after SIGKILL \(--uninterruptible-timeout=2s\)" % pid)
        self.assertRegex(err, r"workers cannot be killed on \S+: this node leaves the job \(exit 4; the "
                              r"other nodes go on without it\)")

    def test_one_node_reports_the_stuck_worker_and_exits_4(self):
        t0 = time.monotonic()
        proc = self.hung(["--standalone", "--nproc-per-node=2", "--max-restarts=3"])
        rc, out, err, left, _ = self.finish(proc)
        self.assertEqual(rc, 4, err)
        self.assert_reported(err, left)
        self.assertNotIn("restarting the workers", err)
        # Failure, 1 s to SIGKILL, 2 s to the check: well before the filesystem's release.
        self.assertLess(time.monotonic() - t0, RELEASE_AFTER_S / 2, err)
        self.assert_nothing_left()

    def test_torchrun_variable_sets_the_timeout(self):
        proc = self.hung(["--standalone", "--nproc-per-node=2", "--max-restarts=1"],
                         env={"TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT": "2"}, timeout=())
        rc, _, err, left, _ = self.finish(proc)
        self.assertEqual(rc, 4, err)
        self.assert_reported(err, left)

    def test_job_failed_while_stuck_keeps_the_jobs_exit_code(self):
        # No restart left: the job's end (exit 1, its summary) is what the node stops for.
        proc = self.hung(["--standalone", "--nproc-per-node=2", "--max-restarts=0"])
        rc, _, err, left, _ = self.finish(proc)
        self.assertEqual(rc, 1, err)
        self.assertRegex(err, r"local rank 0 \(rank 0, pid \d+\) is in uninterruptible sleep \(state D")
        self.assertIn("workers cannot be killed on", err)
        self.assertIn("job failed: first failure: rank 1 (local rank 1)", err)
        self.assertTrue(left["command_exited"], err)

    def test_two_nodes_the_other_goes_on_without_the_stuck_one(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        common = ["--nnodes=1:2", "--max-restarts=3", "--rdzv-backend=c10d",
                  "--rdzv-endpoint=127.0.0.1:%d" % port, "--rdzv-id=stuck-%d" % os.getpid()]
        host = self.start(common + ["--nproc-per-node=1", "--rdzv-conf=munge=0,expected_nodes=2,is_host=1",
                                    PYTHON, WORKER, "hang-fs", self.path("mnt"), self.dir])
        stuck = self.hung(common + ["--nproc-per-node=2", "--rdzv-conf=munge=0,expected_nodes=2,is_host=0"])
        rc, _, err, left, _ = self.finish(stuck)
        self.assertEqual(rc, 4, err)
        self.assert_reported(err, left)
        host_out, host_err = host.communicate(timeout=RELEASE_AFTER_S)
        host_out, host_err = host_out.decode(errors="replace"), host_err.decode(errors="replace")
        self.assertEqual(host.returncode, 0, host_err)
        self.assertRegex(host_err, r"round 1 complete: 1 node\(s\), 1 worker\(s\)")
        self.assertRegex(host_out, r"rank 0 done at restart [1-9]")
        self.assert_nothing_left()


if __name__ == "__main__":
    unittest.main()
