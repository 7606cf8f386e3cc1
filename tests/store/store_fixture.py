"""Starts our elastic-store server (path in $ELASTIC_STORE_BIN) on a free port,
and checks a real PyTorch client against it."""
import os
import subprocess


class StoreProcess:
    def __init__(self, args=(), preexec_fn=None, stderr=None):
        binary = os.environ["ELASTIC_STORE_BIN"]
        # With --port 0 and no --port-file the server prints its port on stdout
        # once it listens: a blocking read, no polling.
        self.proc = subprocess.Popen([binary, "--host", "127.0.0.1", "--port", "0", *args],
                                     stdout=subprocess.PIPE, stderr=stderr, text=True,
                                     preexec_fn=preexec_fn)
        line = self.proc.stdout.readline()
        if not line.strip().isdigit():
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError("elastic-store did not start (printed %r)" % line)
        self.port = int(line)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.proc.stdout.close()
        return self.proc.returncode

    def kill(self):
        """For a test's cleanup: nothing is left when an assertion failed before stop()."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


TORCH_PYTHON = "/usr/bin/python3"  # Debian's python3 with python3-torch

# A real torch.distributed.TCPStore client, in a process of its own (so the
# tests that import no torch stay fast and the sanitizer build can run them):
# set, get, add, wait, then a second client sees the first one's key.
TORCH_PROBE = r"""
import datetime, os, sys
from torch.distributed import TCPStore
opts = {"use_libuv": False} if os.environ.get("ELASTIC_TORCH_NO_LIBUV") == "1" else {}
port = int(sys.argv[1])
def client():
    return TCPStore("127.0.0.1", port, None, False, timeout=datetime.timedelta(seconds=30), **opts)
a = client()
a.set("torch-probe", "ok")
assert a.get("torch-probe") == b"ok", a.get("torch-probe")
assert a.add("torch-probe-count", 1) >= 1
a.wait(["torch-probe"])
assert client().get("torch-probe") == b"ok"
print("torch client ok")
"""


def assert_torch_client_works(test, port):
    """Fails `test` unless a real PyTorch TCPStore client works against `port`."""
    r = subprocess.run([TORCH_PYTHON, "-c", TORCH_PROBE, str(port)], capture_output=True, text=True,
                       timeout=120)
    test.assertIn("torch client ok", r.stdout, "a PyTorch client failed after the attack:\n" + r.stderr)
