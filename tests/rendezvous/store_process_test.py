"""The elastic-store program as a process, without torch (so it also runs in the
sanitizer build): raw 1.13 frames from many clients, a garbage client that is
cut off while the others carry on, and a clean exit on SIGTERM."""
import os
import socket
import struct
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from store_fixture import StoreProcess  # noqa: E402

SET, GET, ADD, WAIT, NUMKEYS = 0, 2, 3, 5, 6


def s(b):
    return struct.pack("<Q", len(b)) + b


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("closed after %d of %d bytes" % (len(buf), n))
        buf += chunk
    return buf


class StoreProgram(unittest.TestCase):
    def setUp(self):
        self.server = StoreProcess()

    def connect(self):
        c = socket.create_connection(("127.0.0.1", self.server.port), timeout=30)
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return c

    def test_many_clients_garbage_and_clean_sigterm(self):
        clients = [self.connect() for _ in range(200)]
        for i, c in enumerate(clients):
            c.sendall(bytes([ADD]) + s(b"init/") + struct.pack("<q", 1))
        for c in clients:
            struct.unpack("<q", recv_exact(c, 8))
        waiter = self.connect()
        waiter.sendall(bytes([WAIT]) + struct.pack("<Q", 1) + s(b"/go"))
        bad = self.connect()
        bad.sendall(b"\x42 definitely not a store frame")
        self.assertEqual(bad.recv(1), b"")  # cut off
        for i, c in enumerate(clients):
            c.sendall(bytes([SET]) + s(b"/k%d" % i) + s(b"v%d" % i) + bytes([GET]) + s(b"/k%d" % i))
        for i, c in enumerate(clients):
            (n,) = struct.unpack("<Q", recv_exact(c, 8))
            self.assertEqual(recv_exact(c, n), b"v%d" % i)
        clients[0].sendall(bytes([NUMKEYS]))
        self.assertEqual(struct.unpack("<q", recv_exact(clients[0], 8))[0], 201)  # init/ + 200
        clients[0].sendall(bytes([SET]) + s(b"/go") + s(b"1"))
        self.assertEqual(recv_exact(waiter, 1), b"\x00")  # STOP_WAITING
        for c in clients + [waiter, bad]:
            c.close()
        self.assertEqual(self.server.stop(), 0)


if __name__ == "__main__":
    unittest.main()
