"""Starts our elastic-store server (path in $ELASTIC_STORE_BIN) on a free port."""
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
