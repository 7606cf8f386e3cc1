"""The elastic-store program as a process: raw 1.13 frames from many clients, a
garbage client that is cut off while the others carry on, attacks on its
limits, and a clean exit on SIGTERM. After each attack a real PyTorch client
(in a process of its own: this file imports no torch) must still work."""
import os
import resource
import socket
import struct
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from store_fixture import StoreProcess, assert_torch_client_works  # noqa: E402

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


class StoreTestCase(unittest.TestCase):
    def start_store(self, **kw):
        server = StoreProcess(**kw)
        self.addCleanup(server.kill)
        return server


class StoreProgram(StoreTestCase):
    def setUp(self):
        self.server = self.start_store()

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
        assert_torch_client_works(self, self.server.port)
        self.assertEqual(self.server.stop(), 0)


def low_fd_limit(n):
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))


def get(sock, key):
    sock.sendall(bytes([GET]) + s(key))
    (n,) = struct.unpack("<Q", recv_exact(sock, 8))
    return recv_exact(sock, n)


def answered_or_closed(sock):
    """Sends a GET: True if answered, False if the server had closed it."""
    try:
        get(sock, b"/k")
        return True
    except (EOFError, ConnectionResetError, BrokenPipeError):
        return False


class OutOfDescriptors(StoreTestCase):
    """RLIMIT_NOFILE of 64 and a flood of 70 connections: the store used to
    spin in accept (EMFILE on the same pending client, never back to epoll)."""

    def flood(self, server):
        a = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        a.sendall(bytes([SET]) + s(b"/k") + s(b"v"))
        self.assertEqual(get(a, b"/k"), b"v")
        flood = [socket.create_connection(("127.0.0.1", server.port), timeout=30) for _ in range(70)]
        self.assertEqual(get(a, b"/k"), b"v")  # during the flood: not stuck in accept
        return a, flood

    def test_default_cap_refuses_connections_beyond_it_and_the_store_answers(self):
        # 64 descriptors, less than twice the reserve: half of them, 32, for connections.
        server = self.start_store(preexec_fn=low_fd_limit(64))
        a, flood = self.flood(server)
        answered = sum(answered_or_closed(c) for c in flood)
        self.assertEqual(answered, 31)  # a holds the 32nd; the other 39 were closed at once
        for c in flood:
            c.close()
        b = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        self.assertEqual(get(b, b"/k"), b"v")
        for c in (a, b):
            c.close()
        assert_torch_client_works(self, server.port)
        self.assertEqual(server.stop(), 0)

    # UBSan's vptr check tests memory through a pipe (sanitizer_common's
    # IsAccessibleMemoryRange); out of descriptors the pipe fails and the check
    # reports a valid object as having "an invalid vptr" (seen in CI: ends the
    # store at a virtual call in event_loop.h or shared_ptr). The release tree
    # runs this test on every system.
    @unittest.skipIf(os.environ.get("ELASTIC_SANITIZED") == "1",
                     "UBSan's vptr check needs free descriptors: false reports when the store has none")
    def test_out_of_descriptors_refuses_clients_and_recovers(self):
        # No cap below the limit: accept4 itself fails with EMFILE.
        server = self.start_store(args=["--max-connections", "1000"], preexec_fn=low_fd_limit(64))
        a, flood = self.flood(server)
        answered = sum(answered_or_closed(c) for c in flood)
        self.assertGreater(answered, 40)
        self.assertLess(answered, 70)  # some were refused, not left hanging
        for c in flood:
            c.close()
        b = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        self.assertEqual(get(b, b"/k"), b"v")
        for c in (a, b):
            c.close()
        assert_torch_client_works(self, server.port)
        self.assertEqual(server.stop(), 0)


class BadClientFlood(StoreTestCase):
    def test_a_flood_of_garbage_clients_logs_a_few_escaped_lines(self):
        server = self.start_store(stderr=subprocess.PIPE)
        for _ in range(300):
            c = socket.create_connection(("127.0.0.1", server.port), timeout=30)
            c.sendall(b"\x42\x1b[2J garbage")
            self.assertEqual(c.recv(1), b"")  # cut off
            c.close()
        assert_torch_client_works(self, server.port)
        self.assertEqual(server.stop(), 0)
        log = server.proc.stderr.read()
        server.proc.stderr.close()
        lines = [l for l in log.splitlines() if "disconnecting" in l]
        self.assertGreater(len(lines), 0)
        self.assertLess(len(lines), 100)  # was one per client
        self.assertNotIn("\x1b", log)


class Slowloris(StoreTestCase):
    """A frame trickling in one byte at a time, each well within the idle
    timeout: it used to hold its connection and buffer for good (1 byte every
    29 s against the default 30 s), now the frame deadline closes it."""

    def test_a_frame_that_trickles_in_is_closed_at_the_frame_deadline(self):
        server = self.start_store(args=["--partial-frame-timeout-ms", "2000", "--frame-deadline-ms", "1500"])
        steady = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        steady.sendall(bytes([SET]) + s(b"/k") + s(b"v"))
        slow = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        frame = bytes([SET]) + s(b"/slow") + s(b"x" * 1000)
        start = time.monotonic()
        closed_after = None
        for byte in frame:  # one byte every 0.2 s: never idle for the 2 s timeout
            try:
                slow.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                closed_after = time.monotonic() - start
                break
            time.sleep(0.2)
            if time.monotonic() - start > 20:
                break  # long past the deadline: the assertion below fails
        self.assertIsNotNone(closed_after, "the trickling connection was still open after 20 s")
        print("a frame trickling in: closed after %.1f s" % closed_after)
        self.assertEqual(get(steady, b"/k"), b"v")  # complete frames, then idle: kept
        for c in (steady, slow):
            c.close()
        assert_torch_client_works(self, server.port)
        self.assertEqual(server.stop(), 0)


if __name__ == "__main__":
    unittest.main()
