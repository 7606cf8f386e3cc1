"""A process group without torch, for the test workers whose subject is the launcher,
the rendezvous or Slurm rather than PyTorch (LIGHT_TEST_WORKER=1): an
`import torch` is 1.5-3 s of CPU, and those suites started hundreds of them per
system (issue 21). The tests that prove PyTorch's own client keep real gloo workers.

The group forms through the agent's store (MASTER_ADDR/MASTER_PORT), as gloo's does:
PyTorch 1.13's TCPStore frames, which the agent's store speaks on every system. Each
collective waits for all WORLD_SIZE ranks of the round there, so a result is right
only if every rank of the round reached the same store. Keys are per round
(TORCHELASTIC_RESTART_COUNT) and per collective. Unlike gloo, a rank whose peer died
is not woken with an error: it stays in the barrier until its agent stops the group
(or the store's host goes away: EOFError)."""
import os
import socket
import struct

SET, ADD, WAIT = 0, 3, 5
STOP_WAITING = b"\x00"


def _text(b):
    return struct.pack("<Q", len(b)) + b


class StoreClient:
    """The few TCPStore queries of PyTorch 1.13's protocol a light group needs."""

    def __init__(self, addr, port, timeout=600):
        self.sock = socket.create_connection((addr, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _recv(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise EOFError("the agent's store closed the connection")
            buf += chunk
        return buf

    def add(self, key, value):
        self.sock.sendall(bytes([ADD]) + _text(key) + struct.pack("<q", value))
        return struct.unpack("<q", self._recv(8))[0]

    def set(self, key, value):
        self.sock.sendall(bytes([SET]) + _text(key) + _text(value))

    def wait(self, key):
        self.sock.sendall(bytes([WAIT]) + struct.pack("<Q", 1) + _text(key))
        if self._recv(1) != STOP_WAITING:
            raise EOFError("unexpected answer to WAIT")

    def close(self):
        self.sock.close()


class LightGroup:
    """The round's WORLD_SIZE ranks: barrier() and all_reduce_sum() through the store."""

    def __init__(self, env=os.environ):
        self.rank = int(env["RANK"])
        self.world = int(env["WORLD_SIZE"])
        self.prefix = b"light/%d/" % int(env.get("TORCHELASTIC_RESTART_COUNT", "0"))
        self.store = StoreClient(env["MASTER_ADDR"], int(env["MASTER_PORT"]))
        self.calls = 0
        self.barrier()  # every rank arrived, as gloo's group start waits for all

    def _key(self, what):
        self.calls += 1
        return self.prefix + b"%d/%s" % (self.calls, what)

    def barrier(self):
        key = self._key(b"barrier")
        if self.store.add(key, 1) == self.world:
            self.store.set(key + b"/all", b"1")
        self.store.wait(key + b"/all")

    def all_reduce_sum(self, value):
        key = self._key(b"sum")
        self.store.add(key, value)
        self.barrier()
        return self.store.add(key, 0)

    def close(self):
        self.store.close()
