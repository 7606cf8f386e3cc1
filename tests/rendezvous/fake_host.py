"""A scripted rendezvous host on raw sockets, to attack a real elasticrun agent
(frames: uint32 big-endian length + one JSON object, rendezvous/frame.h; with a
token, every frame after the welcome ends in its authentication tag,
rendezvous/connection.h)."""
import hashlib
import hmac
import json
import os
import socket
import struct
import threading

TRANSCRIPT = ("slurm-elastic rendezvous v4\ndirection={}\nhost_nonce={host_nonce}\n"
              "agent_nonce={agent_nonce}\nauth={auth}\nround={round}\nlast_completed={last_completed}\n"
              "name={name}\npid={pid}\npreferred_rank={preferred_rank}\nlisten_port={listen_port}\n"
              "regime={regime}\n{}run_id={run_id}")
WELCOME_NODE_ID = 2  # the fake host's welcome


def handshake_fields(challenge, hello, node_id=WELCOME_NODE_ID):
    """Every field both proofs cover (protocol 4, rendezvous/auth.h Handshake)."""
    return {"host_nonce": challenge["nonce"], "agent_nonce": hello["nonce"], "auth": challenge["auth"],
            "round": challenge.get("round", 0), "last_completed": challenge.get("last_completed", -1),
            "regime": challenge.get("regime", ""),
            "run_id": hello["run_id"], "name": hello["name"], "pid": hello["pid"],
            "preferred_rank": hello["preferred_rank"], "listen_port": hello.get("listen_port", 0),
            "node_id": node_id}


def transcript(direction, fields):
    node = "node_id={}\n".format(fields["node_id"]) if direction == "host->agent" else ""
    return TRANSCRIPT.format(direction, node, **fields)


def hmac_hex(token, text):
    return hmac.new(token.encode(), text.encode(), hashlib.sha256).hexdigest()


def session_key(token, direction, fields):
    return hmac_hex(token, "session\n" + transcript(direction, fields))


def frame_tag(key, number, payload):
    return hmac.new(key.encode(), struct.pack(">Q", number) + payload, hashlib.sha256).hexdigest().encode()


class Session:
    """The frame numbers and keys of one direction pair after the welcome."""

    def __init__(self, send_key, receive_key):
        self.keys = (send_key, receive_key)
        self.numbers = [0, 0]

    def tag(self, i, payload):
        tag = frame_tag(self.keys[i], self.numbers[i], payload)
        self.numbers[i] += 1
        return tag


def send_msg(conn, obj, session=None):
    payload = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    if session is not None:
        payload += session.tag(0, payload)
    conn.sendall(struct.pack(">I", len(payload)) + payload)


def recv_frame(conn):
    def exactly(n):
        data = b""
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            if not chunk:
                raise EOFError("closed")
            data += chunk
        return data
    (n,) = struct.unpack(">I", exactly(4))
    return exactly(n)


def recv_msg(conn, session=None):
    payload = recv_frame(conn)
    if session is not None:
        payload, tag = payload[:-64], payload[-64:]
        if tag != session.tag(1, payload):
            raise AssertionError("a frame from the agent failed authentication")
    return json.loads(payload)


def round_msg(store_port):
    return {"type": "round", "round": 0, "group_rank": 0, "group_world_size": 1,
            "rank_offset": 0, "world_size": 1, "store_addr": "127.0.0.1",
            "store_port": store_port, "use_agent_store": True, "restarts_used": 0}


class FakeHost:
    """Listens on port; `script(host, conn)` runs on the first connection, in a thread."""

    def __init__(self, port, run_id, script):
        self.run_id = run_id
        self.nonce = os.urandom(32).hex()
        self.hello = None
        self.error = None
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", port))
        self.listener.listen(8)
        self.conn = None
        self.session = None  # set by welcome() when the fake host holds the token
        self.token = None
        self.thread = threading.Thread(target=self._serve, args=(script,), daemon=True)
        self.thread.start()

    def _serve(self, script):
        try:
            self.conn, _ = self.listener.accept()
            self.conn.settimeout(30)
            script(self, self.conn)
        except Exception as e:  # the agent closing on us is the usual end
            self.error = e

    def challenge(self, auth="token", version=4):
        # "challenge": what protocol v1 agents signed, so one fake host can show
        # the same attack against an agent from before the fix (v2 ignores it).
        v1 = "slurm-elastic rendezvous v1\nnonce={}\nrun_id={}".format(self.nonce, self.run_id)
        self.challenge_msg = {"type": "challenge", "version": version, "run_id": self.run_id,
                              "nonce": self.nonce, "challenge": v1, "auth": auth}
        send_msg(self.conn, self.challenge_msg)
        self.hello = recv_msg(self.conn)
        return self.hello

    def fields(self):
        return handshake_fields(self.challenge_msg, self.hello)

    def host_proof(self, token):
        if "nonce" not in self.hello:
            return ""  # a v1 agent checks nothing
        self.token = token
        return hmac_hex(token, transcript("host->agent", self.fields()))

    def welcome(self, proof):
        send_msg(self.conn, {"type": "welcome", "node_id": WELCOME_NODE_ID, "proof": proof})
        if self.token is not None:  # a genuine welcome: frames are authenticated from now on
            keys = [session_key(self.token, d, self.fields()) for d in ("host->agent", "agent->host")]
            self.session = Session(*keys)

    def send(self, obj):
        """A message after the welcome, tagged when the session is authenticated."""
        send_msg(self.conn, obj, self.session)

    def until(self, type_):
        while True:
            msg = recv_msg(self.conn, self.session)
            if msg["type"] == type_:
                return msg

    def close(self):
        for s in (self.conn, self.listener):
            if s is not None:
                try:
                    s.close()
                except OSError:
                    pass
