"""Attacks on the rendezvous, each once a measured defect: a fake host (raw
sockets, fake_host.py) against a real elasticrun agent, and strangers against a
real elasticrun host. Each test is bounded to a few seconds."""
import os
import signal
import socket
import struct
import time

from fake_host import FakeHost, round_msg, send_msg
from rdzv_test_util import RendezvousTestCase
from test_elastic import MungeTest

TOKEN = "the-token"
BOUND_S = 20  # every scenario ends well within this
# A worker that says it started, with what the host told it.
WORKER = ["-c", "echo worker-started master=$MASTER_ADDR:$MASTER_PORT; sleep ${HOLD:-0}"]


def vm_rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


class FakeHostCase(RendezvousTestCase):
    """Helpers: a fake host on this test's port, an agent that joins it."""

    def tearDown(self):
        if getattr(self, "host", None):
            self.host.close()
        super().tearDown()

    def agent(self, conf="", hold=0):
        conf = ",".join(filter(None, ["is_host=0", "token=" + TOKEN, conf]))
        return self.start_agent(2, nproc=1, conf=conf, extra=["--no-python"], program="/bin/sh",
                                worker_args=WORKER, env={"HOLD": str(hold)})

    def fake(self, script):
        self.host = FakeHost(self.port, self.run_id, script)

    def bounded_exit(self, agent):
        end = time.monotonic() + BOUND_S
        while agent.proc.poll() is None:
            if time.monotonic() > end:
                self.fail("the agent still runs after %d s\n%s" % (BOUND_S, self.dump()))
            time.sleep(0.05)
        return agent.proc.returncode


class FakeHostTest(FakeHostCase):
    # 1: a wrongly typed field used to throw nlohmann::type_error on the loop (SIGABRT).
    def test_wrongly_typed_field_ends_the_agent_cleanly_naming_it(self):
        def script(h, conn):
            h.challenge()
            h.welcome(h.host_proof(TOKEN))
            h.until("join")
            send_msg(conn, round_msg(1))
            time.sleep(1)  # the worker starts
            send_msg(conn, {"type": "fatal", "message": 1})
            h.until("never")
        self.fake(script)
        agent = self.agent(hold=60)
        rc = self.bounded_exit(agent)
        self.assertNotIn(rc, (-signal.SIGABRT, 128 + signal.SIGABRT), self.dump())
        self.assertNotEqual(rc, 0)
        self.assertIn("worker-started", agent.output(), "the worker ran when the message came")
        self.assertIn("bad 'fatal' message: field 'message'", agent.output())
        self.assert_nothing_left()

    @staticmethod
    def run_one_round(h, conn):
        """A fake host's round after its handshake: a round, then done once the workers succeeded."""
        h.until("join")
        send_msg(conn, round_msg(1))
        h.until("succeeded")
        send_msg(conn, {"type": "done", "message": "ok"})

    def assert_agent_refuses(self, script, why):
        """The agent facing the fake host `script` fails naming `why`, no worker started."""
        self.fake(script)
        agent = self.agent()
        self.assertNotEqual(self.bounded_exit(agent), 0, self.dump())
        self.assertIn(why, agent.output())
        self.assertNotIn("worker-started", agent.output())

    # 2: a fake host saying auth "none" used to be believed by a token holder.
    def test_host_offering_no_authentication_to_a_token_agent_is_refused(self):
        def script(h, conn):
            h.challenge(auth="none")
            h.welcome("")
            self.run_one_round(h, conn)
        self.assert_agent_refuses(script, "refusing the downgrade")

    # 2: the agent's own proof reflected back (a relay) used to pass for the host's.
    def test_host_that_reflects_the_agents_proof_is_not_believed(self):
        def script(h, conn):
            hello = h.challenge()
            h.welcome(hello["proof"])
            self.run_one_round(h, conn)
        self.assert_agent_refuses(script, "failed to prove itself (token)")

    # 4: a done before any round used to leave the agent waiting forever.
    def test_done_before_a_round_ends_the_agent_naming_it(self):
        def script(h, conn):
            h.challenge()
            h.welcome(h.host_proof(TOKEN))
            h.until("join")
            send_msg(conn, {"type": "done", "message": "early"})
            h.until("never")
        self.fake(script)
        agent = self.agent()
        self.assertNotEqual(self.bounded_exit(agent), 0, self.dump())
        self.assertIn("'done' (early) before this agent's workers ran a round", agent.output())

    # 4: a host that accepts and says nothing used to be waited for forever.
    def test_host_that_never_challenges_is_given_up_after_auth_timeout(self):
        self.fake(lambda h, conn: time.sleep(BOUND_S + 5))
        agent = self.agent(conf="auth_timeout=1")
        self.assertNotEqual(self.bounded_exit(agent), 0, self.dump())
        self.assertIn("no challenge from the rendezvous host 127.0.0.1:%d within auth_timeout"
                      % self.port, agent.output())


class MungeDowngradeTest(FakeHostCase):
    """An agent that reaches a munged (no token) refuses a host offering none."""

    def setUp(self):
        super().setUp()
        self.munged = []
        if not os.path.exists("/usr/sbin/munged"):
            self.skipTest("munge is not installed")

    def tearDown(self):
        for proc in self.munged:
            proc.kill()
            proc.wait()
        super().tearDown()

    def test_munge_agent_refuses_a_host_offering_no_authentication(self):
        sock = MungeTest.start_munged(self, "realm")

        def script(h, conn):
            h.challenge(auth="none")
            h.welcome("")
            h.until("join")
            send_msg(conn, round_msg(1))
            h.until("never")
        self.fake(script)
        agent = self.start_agent(2, nproc=1, conf="is_host=0,munge_socket=" + sock,
                                 extra=["--no-python"], program="/bin/sh", worker_args=WORKER)
        self.assertNotEqual(self.bounded_exit(agent), 0, self.dump())
        self.assertIn("but this agent has munge: refusing the downgrade", agent.output())
        self.assertIn("munge=0 allows it", agent.output())
        self.assertNotIn("worker-started", agent.output())


class StrangerTest(RendezvousTestCase):
    """Unauthenticated peers against a real elasticrun host."""

    def real_host(self):
        host = self.start_agent(2, nproc=1, conf="token=" + TOKEN, extra=["--no-python"],
                                program="/bin/true")
        self.wait_listening()
        time.sleep(0.2)
        return host

    def connect(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        return s

    # 5: a hello whose type holds a newline and escapes used to print forged lines.
    def test_forged_type_is_logged_escaped_on_the_host(self):
        host = self.real_host()
        s = self.connect()
        send_msg(s, b'{"type":"hel\\nelasticrun: error: FORGED\\u001b[2J' + b"A" * 3000 + b'"}')
        s.settimeout(5)
        try:
            while s.recv(4096):
                pass
        except OSError:
            pass
        s.close()
        self.wait_for(lambda: "refused connection" in host.output(), "the refusal on the host")
        out = host.output()
        self.assertNotIn("\nelasticrun: error: FORGED", out)
        self.assertNotIn("\x1b", out)
        self.assertIn("\\x0aelasticrun: error: FORGED\\x1b[2J", out)
        self.assertLess(max(len(l) for l in out.splitlines()), 400)

    # 3: 1 MiB - 1 frame headers from strangers used to be buffered in full.
    def test_strangers_cannot_make_the_host_buffer_their_frames(self):
        host = self.real_host()
        before = vm_rss_kib(host.proc.pid)
        socks = []
        body = b"x" * ((1 << 20) - 2)
        for _ in range(100):
            try:
                s = self.connect()
                socks.append(s)
                s.sendall(struct.pack(">I", (1 << 20) - 1) + body)
            except OSError:
                pass  # closed by the host: what we want
        time.sleep(0.5)
        after = vm_rss_kib(host.proc.pid)
        for s in socks:
            s.close()
        print("host VmRSS %d KiB before, %d KiB after 100 strangers" % (before, after))
        self.assertLess(after - before, 16 * 1024, "host RSS grew by %d KiB" % (after - before))
        self.assertIsNone(host.proc.poll(), "the host still runs")
