"""A real 2-process gloo init_process_group + all_reduce + barrier on our store,
as workers under an agent-hosted store see it: every rank (0 included)
connects as a client (TORCHELASTIC_USE_AGENT_STORE=True), keys under the
PrefixStore /worker/attempt_<TORCHELASTIC_RESTART_COUNT> on 1.13, unprefixed on 2.x.
With ELASTIC_TORCH_NO_LIBUV=1 (a torch without libuv) the workers get elasticrun's
shim on PYTHONPATH, as under elasticrun."""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from store_fixture import StoreProcess  # noqa: E402

SHIM_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "launcher", "python")

WORKER = r"""
import datetime, os, torch, torch.distributed as dist
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
dist.barrier()
print("RESULT", rank, world, int(t.item()), flush=True)
dist.destroy_process_group()
"""


class GlooOnOurStore(unittest.TestCase):
    def test_two_ranks_all_reduce(self):
        server = StoreProcess()
        try:
            procs = []
            for rank in range(2):
                env = dict(os.environ)
                env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(server.port), RANK=str(rank),
                           WORLD_SIZE="2", LOCAL_RANK=str(rank), TORCHELASTIC_USE_AGENT_STORE="True",
                           TORCHELASTIC_RESTART_COUNT="0", OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo")
                if os.environ.get("ELASTIC_TORCH_NO_LIBUV") == "1":  # as elasticrun does (docs/user.md)
                    env["PYTHONPATH"] = SHIM_DIR
                procs.append(subprocess.Popen([sys.executable, "-c", WORKER], env=env,
                                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
            outs = []
            for p in procs:
                out, err = p.communicate(timeout=120)
                self.assertEqual(p.returncode, 0, err)
                outs.append(out)
            results = sorted(line.split()[1:] for o in outs for line in o.splitlines() if line.startswith("RESULT"))
            # all_reduce of 1 + 2 = 3 on both ranks.
            self.assertEqual(results, [["0", "2", "3"], ["1", "2", "3"]])
        finally:
            self.assertEqual(server.stop(), 0)


if __name__ == "__main__":
    unittest.main()
