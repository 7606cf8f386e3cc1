#!/usr/bin/env python3
"""How long one client's requests stall the store's loop for everybody else
(issue 19 items 1 and 2): a probe connection PINGs every 10 ms and reports its
worst round trip while another client
  --mode list: fills the store with --keys small keys, then sends --lists
               LIST_KEYS on as many connections and reads the replies;
  --mode wait: sends --waits WAITs of distinct missing keys (--wait-bytes each)
               on one connection, then closes it.
Prints one line: mode, sizes, the worst PING round trip, elastic-store's peak RSS.

    stall_probe.py BUILD/store/elastic-store --mode list --keys 2000000 --lists 10
    stall_probe.py BUILD/store/elastic-store --mode wait --waits 20 --wait-bytes 3145728
"""
import argparse
import multiprocessing
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

VALIDATE = b"\x00" + struct.pack("<I", 0x3C85F7CE)
WAIT, MULTI_SET, PING, LIST_KEYS = 6, 11, 13, 17


def connect(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(VALIDATE)
    return s


def string(b):
    return struct.pack("<Q", len(b)) + b


def read_exact(s, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise EOFError("store closed the connection")
        buf += chunk
    return bytes(buf)


def fill(port, keys):
    s = connect(port)
    batch = 20000
    for start in range(0, keys, batch):
        n = min(batch, keys - start)
        body = b"".join(string(b"/k%d" % i) + string(b"v") for i in range(start, start + n))
        s.sendall(bytes([MULTI_SET]) + struct.pack("<Q", n) + body)
    s.sendall(bytes([PING]) + struct.pack("<I", 1))
    read_exact(s, 4)
    s.close()


def probe(port, stop, worst):
    """In a process of its own: the clients' Python threads must not hold it back (GIL)."""
    sock = connect(port)
    nonce = 0
    while not stop.is_set():
        nonce += 1
        t0 = time.monotonic()
        sock.sendall(bytes([PING]) + struct.pack("<I", nonce))
        read_exact(sock, 4)
        worst.value = max(worst.value, time.monotonic() - t0)
        time.sleep(0.01)


def peak_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return -1


def list_keys(port, reply_size):
    s = connect(port)
    s.sendall(bytes([LIST_KEYS]))
    got = 0
    try:
        while got < reply_size:  # read in bulk: parsing key by key in Python is the bottleneck
            chunk = s.recv(1 << 20)
            if not chunk:
                break  # refused (too big for max_output): the stall before it is the figure
            got += len(chunk)
    except ConnectionError:
        pass
    s.close()


def waits(port, count, wait_bytes):
    s = connect(port)
    per_key = 8 + 12
    n = wait_bytes // per_key
    for w in range(count):
        body = b"".join(string(b"/m%011d" % (w * n + i)) for i in range(n))
        try:
            s.sendall(bytes([WAIT]) + struct.pack("<Q", n) + body)
        except ConnectionError:
            break  # refused (the memory budget)
    time.sleep(1.0)  # let the store register them
    s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("store")
    ap.add_argument("--mode", choices=["list", "wait"], required=True)
    ap.add_argument("--keys", type=int, default=2_000_000)
    ap.add_argument("--lists", type=int, default=10)
    ap.add_argument("--waits", type=int, default=20)
    ap.add_argument("--wait-bytes", type=int, default=3 << 20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        port_file = os.path.join(tmp, "port")
        store = subprocess.Popen([args.store, "--port", "0", "--port-file", port_file],
                                 stderr=subprocess.DEVNULL)
        try:
            while not os.path.exists(port_file):
                time.sleep(0.01)
            port = int(open(port_file).read())
            if args.mode == "list":
                fill(port, args.keys)
            stop, worst = multiprocessing.Event(), multiprocessing.Value("d", 0.0)
            prober = multiprocessing.Process(target=probe, args=(port, stop, worst))
            prober.start()
            time.sleep(0.5)
            t0 = time.monotonic()
            if args.mode == "list":
                reply_size = 8 + sum(8 + len(b"/k%d" % i) for i in range(args.keys))
                threads = [threading.Thread(target=list_keys, args=(port, reply_size))
                           for _ in range(args.lists)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
            else:
                waits(port, args.waits, args.wait_bytes)
            time.sleep(2.0)  # a teardown still under way shows in the probe
            stop.set()
            prober.join()
            print(f"mode={args.mode} keys={args.keys} lists={args.lists} waits={args.waits} "
                  f"wait_bytes={args.wait_bytes} run_s={time.monotonic() - t0:.2f} "
                  f"worst_ping_ms={worst.value * 1000:.1f} store_peak_rss_kib={peak_rss_kib(store.pid)}")
        finally:
            store.kill()
            store.wait()


if __name__ == "__main__":
    sys.exit(main())
