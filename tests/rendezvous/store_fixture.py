"""Starts our elastic-store server (path in $ELASTIC_STORE_BIN) on a free port."""
import os
import subprocess
import tempfile
import time


class StoreProcess:
    def __init__(self):
        binary = os.environ["ELASTIC_STORE_BIN"]
        self._dir = tempfile.TemporaryDirectory(prefix="store_test_")
        port_file = os.path.join(self._dir.name, "port")
        self.proc = subprocess.Popen([binary, "--host", "127.0.0.1", "--port", "0", "--port-file", port_file])
        # The server writes the file atomically once it listens; wait for that
        # (bounded, so a broken server fails the test rather than hanging it).
        deadline = time.monotonic() + 30
        while not os.path.exists(port_file):
            if self.proc.poll() is not None:
                raise RuntimeError("elastic-store exited with %d" % self.proc.returncode)
            if time.monotonic() > deadline:
                raise RuntimeError("elastic-store did not start")
            time.sleep(0.01)
        with open(port_file) as f:
            self.port = int(f.read())

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self._dir.cleanup()
        return self.proc.returncode
