#!/usr/bin/env python3
"""Strangers against a real elasticrun rendezvous host (docs/security.md table):
N connections that each send a frame header announcing 1 MiB - 1 and then
BODY bytes of it, or send nothing and hold their connection (idle). Prints the
host's VmRSS and open descriptors before and after.
  preauth_attack.py ELASTICRUN [N] [BODY|idle]"""
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time


def status(pid):
    with open("/proc/%d/status" % pid) as f:
        rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
    return rss, len(os.listdir("/proc/%d/fd" % pid))


def main():
    elasticrun = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    mode = sys.argv[3] if len(sys.argv) > 3 else str((1 << 20) - 2)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tempfile.TemporaryFile()
    host = subprocess.Popen([elasticrun, "--nnodes=2", "--nproc-per-node=1", "--rdzv-backend=c10d",
                             "--rdzv-endpoint=127.0.0.1:%d" % port, "--rdzv-id=attack",
                             "--rdzv-conf=munge=0,token=secret", "--no-python", "/bin/true"],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(200):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        time.sleep(0.3)
        before = status(host.pid)
        socks, refused = [], 0
        body = b"" if mode == "idle" else b"x" * int(mode)
        for _ in range(n):
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                socks.append(s)
                if mode != "idle":
                    s.sendall(struct.pack(">I", (1 << 20) - 1) + body)
            except OSError:
                refused += 1
        time.sleep(1)
        after = status(host.pid)
        print("%d connections (%s): host VmRSS %d -> %d KiB, fds %d -> %d, "
              "%d sends failed (closed by the host), host alive: %s"
              % (n, mode, before[0], after[0], before[1], after[1], refused, host.poll() is None))
        for s in socks:
            s.close()
    finally:
        host.kill()
        host.wait()


if __name__ == "__main__":
    main()
