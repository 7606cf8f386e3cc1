"""Who may use the agent's store (issue 19 item 4): a real agent (elasticrun
--standalone) with a real PyTorch worker on its store; another local user
(uid nobody, through setpriv) connects to the store and tries to set, get,
list and delete the job's keys: every connection is closed at once, while the
worker and a client of the job's own user (this test's, root's) work. A
flood of the stranger's connections costs a few log lines, not one each."""
import json
import os
import socket
import struct
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../launcher"))
from launcher_test_util import DEADLINE_S, PYTHON, LauncherTestCase, wait_for  # noqa: E402

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "admission_worker.py")
NOBODY = 65534
VALIDATE, SET, GET, DELETE, LIST_KEYS = 0, 1, 3, 8, 17  # PyTorch 2.x's TCPStore
MAGIC = 0x3C85F7CE
FLOOD = 200

# The same requests from any user, one connection each (so each is refused on
# its own): set, get and list, delete the key argv[3], then argv[4] bare
# connections (keys as PyTorch's client writes them: "/" first). Prints one
# JSON object: request -> what came back.
CLIENT = r"""
import json, socket, struct, sys
addr, port = sys.argv[1], int(sys.argv[2])
def s(b): return struct.pack("<Q", len(b)) + b
def recv_exact(c, n):
    buf = b""
    while len(buf) < n:
        chunk = c.recv(n - len(buf))
        if not chunk: raise EOFError("closed")
        buf += chunk
    return buf
def ask(frame, reply):
    c = socket.create_connection((addr, port), timeout=30)
    try:
        c.sendall(bytes([0]) + struct.pack("<I", 0x3C85F7CE) + frame)
        return reply(c)
    except (EOFError, ConnectionResetError, BrokenPipeError) as e:
        return "closed (%s)" % type(e).__name__
    finally:
        c.close()
def string(c): return recv_exact(c, struct.unpack("<Q", recv_exact(c, 8))[0]).decode()
def i64(c): return struct.unpack("<q", recv_exact(c, 8))[0]
def keys(c): return sorted(string(c) for _ in range(i64(c)))
out = {
    "set": ask(bytes([1]) + s(b"/intruder-key") + s(b"x") + bytes([13]) + struct.pack("<I", 7),
               lambda c: "stored" if struct.unpack("<I", recv_exact(c, 4))[0] == 7 else "?"),
    "get": ask(bytes([3]) + s(b"/job-key"), string),
    "list": ask(bytes([17]), keys),
    "delete": ask(bytes([8]) + s(sys.argv[3].encode()), i64),
}
flood = int(sys.argv[4])
closed = 0
for _ in range(flood):
    c = socket.create_connection((addr, port), timeout=5)
    try:
        closed += c.recv(1) == b""
    except ConnectionResetError:
        closed += 1
    except socket.timeout:
        break  # admitted: the store waits for a request
    finally:
        c.close()
out["flood_closed"] = closed
print(json.dumps(out))
"""


def as_user(uid):
    return ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups"]


@unittest.skipUnless(os.geteuid() == 0, "needs root to connect as another user (setpriv)")
class StoreAdmissionTest(LauncherTestCase):
    def client(self, prefix, addr, port, delete, flood=0):
        r = subprocess.run(prefix + [PYTHON, "-c", CLIENT, addr, str(port), delete, str(flood)],
                           capture_output=True, text=True, timeout=DEADLINE_S)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def test_another_user_is_refused_and_the_job_goes_on(self):
        proc = self.start(["--standalone", "--nproc-per-node=1", "--python", PYTHON, WORKER, self.dir])
        ready = self.path("ready")
        wait_for(self, lambda: os.path.exists(ready) or proc.poll() is not None, "the worker's store")
        self.assertTrue(os.path.exists(ready), "the worker did not reach the store")
        with open(ready) as f:
            store = json.load(f)

        stranger = self.client(as_user(NOBODY), store["addr"], store["port"], "/job-key", FLOOD)
        print("uid %d against the store: %s" % (NOBODY, stranger))
        for request in ("set", "get", "list", "delete"):
            self.assertTrue(str(stranger[request]).startswith("closed"), (request, stranger))
        self.assertEqual(stranger["flood_closed"], FLOOD)

        own = self.client([], store["addr"], store["port"], "/intruder-key")
        self.assertEqual(own["set"], "stored")
        self.assertEqual(own["get"], "job-value")
        self.assertIn("/job-key", own["list"])
        self.assertIn("/intruder-key", own["list"])
        self.assertEqual(own["delete"], 1)
        release = socket.create_connection((store["addr"], store["port"]), timeout=30)
        release.sendall(bytes([VALIDATE]) + struct.pack("<I", MAGIC) + bytes([SET]) + struct.pack("<Q", 8)
                        + b"/release" + struct.pack("<Q", 1) + b"1")
        out, err = proc.communicate(timeout=DEADLINE_S)
        release.close()
        out, err = out.decode(errors="replace"), err.decode(errors="replace")
        self.assertEqual(proc.returncode, 0, err)
        self.assertIn("worker: job-key is 'job-value'", out)
        refusals = [l for l in err.splitlines() if "refused connection" in l]
        print("%d connections refused, %d log lines" % (FLOOD + 4, len(refusals)))
        self.assertTrue(any("uid %d, not the job's user" % NOBODY in l for l in refusals), err)
        self.assertLess(len(refusals), 40, "a refusal per connection is a log flood:\n" + err)
        self.assert_nothing_left()


if __name__ == "__main__":
    unittest.main()
