"""Network namespaces for the randomized fault run (fault_run.py): one namespace
per node, each with a veth into a hub namespace that holds three bridges. Every
node starts on bridge 0 (all of them reach each other); a partition moves nodes'
links to bridge 1 or 2, which truly cuts every packet between the sides
(rendezvous, store and gloo alike), as test_partition.py does; healing moves them
back. Nothing is added to the namespace the run starts in. Needs root."""
import os
import subprocess

SIDES = 3  # bridge 0: the main side; 1 and 2: up to two cut-off sides


def ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


class Namespaces:
    def __init__(self, tag, count, subnet="10.232.0"):
        """`tag`: a short unique prefix (interface names are at most 15 bytes)."""
        self.tag = tag
        self.count = count
        self.subnet = subnet
        self.hub = tag + "h"
        self.made = []
        self.side_of = [0] * count

    def create(self):
        try:
            self._create()
        except BaseException:
            self.remove()
            raise

    def _create(self):
        ip("netns", "add", self.hub)
        self.made.append(self.hub)
        for side in range(SIDES):
            ip("-n", self.hub, "link", "add", self.bridge(side), "type", "bridge")
            ip("-n", self.hub, "link", "set", self.bridge(side), "up")
        for k in range(self.count):
            ns = dev = self.name(k)
            ip("netns", "add", ns)
            self.made.append(ns)
            ip("link", "add", dev, "netns", ns, "type", "veth", "peer", "name", dev + "p",
               "netns", self.hub)
            ip("-n", ns, "addr", "add", "%s/24" % self.addr(k), "dev", dev)
            ip("-n", ns, "link", "set", dev, "up")
            ip("-n", ns, "link", "set", "lo", "up")
            ip("-n", self.hub, "link", "set", dev + "p", "master", self.bridge(0), "up")

    def remove(self):
        for ns in reversed(self.made):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)
        self.made = []

    def name(self, k):
        return "%s%d" % (self.tag, k)

    def bridge(self, side):
        return "%sb%d" % (self.tag, side)

    def addr(self, k):
        return "%s.%d" % (self.subnet, k + 1)

    def node_of(self, addr):
        """The node whose address `addr` is, or None."""
        prefix = self.subnet + "."
        if not addr.startswith(prefix) or not addr[len(prefix):].isdigit():
            return None
        k = int(addr[len(prefix):]) - 1
        return k if 0 <= k < self.count else None

    def enter(self, k):
        """The argv prefix that runs a program in node k's namespace (nsenter execs it:
        the pid a caller starts is the program's)."""
        return ["nsenter", "--net=/run/netns/" + self.name(k)]

    def env(self, k):
        """What a node's workers need: gloo on the node's own link."""
        return {"GLOO_SOCKET_IFNAME": self.name(k)}

    def move(self, k, side):
        ip("-n", self.hub, "link", "set", self.name(k) + "p", "master", self.bridge(side))
        self.side_of[k] = side


def can_make_namespaces():
    return os.geteuid() == 0 and subprocess.run(["ip", "-V"], capture_output=True).returncode == 0
