"""A real PyTorch worker for store_admission_test.py: through torch's own
TCPStore client on the agent's store (MASTER_ADDR/MASTER_PORT) it sets a key,
says where the store is (DIR/ready), waits for the test's "release" key, and
checks that its key is still its own. Usage: admission_worker.py DIR"""
import datetime
import json
import os
import sys

from torch.distributed import TCPStore

out_dir = sys.argv[1]
opts = {"use_libuv": False} if os.environ.get("ELASTIC_TORCH_NO_LIBUV") == "1" else {}
store = TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), None, False,
                 timeout=datetime.timedelta(seconds=100), **opts)
store.set("job-key", "job-value")
with open(os.path.join(out_dir, "ready.tmp"), "w") as f:
    json.dump({"addr": os.environ["MASTER_ADDR"], "port": int(os.environ["MASTER_PORT"])}, f)
os.rename(os.path.join(out_dir, "ready.tmp"), os.path.join(out_dir, "ready"))
store.wait(["release"])
value = store.get("job-key")
print("worker: job-key is %r" % value.decode(), flush=True)
sys.exit(0 if value == b"job-value" else 1)
