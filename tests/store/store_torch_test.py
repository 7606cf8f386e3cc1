"""Real PyTorch TCPStore clients (is_master=False; 1.13 and 2.x) against our server."""
import datetime
import os
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from store_fixture import StoreProcess  # noqa: E402

from torch.distributed import TCPStore  # noqa: E402

TIMEOUT = datetime.timedelta(seconds=30)
# A torch built without libuv (Debian's 2.x) needs use_libuv=False even for a
# client; scripts/suite.sh sets ELASTIC_TORCH_NO_LIBUV=1 there.
CLIENT_OPTIONS = {"use_libuv": False} if os.environ.get("ELASTIC_TORCH_NO_LIBUV") == "1" else {}


class TorchClientAgainstOurStore(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = StoreProcess()

    @classmethod
    def tearDownClass(cls):
        # 0: it stopped cleanly on SIGTERM (no crash while serving real clients).
        assert cls.server.stop() == 0

    def client(self, world_size=None):
        return TCPStore("127.0.0.1", self.server.port, world_size, False, timeout=TIMEOUT, **CLIENT_OPTIONS)

    def test_set_get(self):
        s = self.client()
        s.set("greeting", "hello")
        self.assertEqual(s.get("greeting"), b"hello")
        s.set("greeting", b"\x00binary\xff")
        self.assertEqual(s.get("greeting"), b"\x00binary\xff")

    def test_add_counts_and_stores_text(self):
        s = self.client()
        self.assertEqual(s.add("counter", 5), 5)
        self.assertEqual(s.add("counter", -2), 3)
        self.assertEqual(s.get("counter"), b"3")

    def test_compare_set(self):
        s = self.client()
        s.set("cas", "a")
        self.assertEqual(s.compare_set("cas", "wrong", "b"), b"a")
        self.assertEqual(s.compare_set("cas", "a", "b"), b"b")
        self.assertEqual(s.get("cas"), b"b")

    def test_compare_set_quirk_on_missing_key(self):
        s = self.client()
        self.assertEqual(s.compare_set("cas_missing", "expected", "new"), b"expected")
        # ... and stores nothing. (A client whose wait timed out is out of step
        # with its socket in 1.13, so probe from a second client.)
        with self.assertRaises(RuntimeError):
            self.client().wait(["cas_missing"], datetime.timedelta(milliseconds=200))
        self.assertEqual(s.compare_set("cas_missing", "", "new"), b"new")
        self.assertEqual(s.get("cas_missing"), b"new")

    def test_wait_times_out_with_error(self):
        s = self.client()
        with self.assertRaisesRegex(RuntimeError, "[Tt]imeout|[Tt]imed out"):
            s.wait(["never_set"], datetime.timedelta(milliseconds=300))

    def test_wait_woken_by_another_client(self):
        waiter, setter = self.client(), self.client()
        result = {}

        def wait():
            waiter.wait(["wake_me"])
            result["value"] = waiter.get("wake_me")

        t = threading.Thread(target=wait)
        t.start()
        setter.set("wake_me", "up")
        t.join(timeout=60)
        self.assertFalse(t.is_alive())
        self.assertEqual(result["value"], b"up")

    def test_two_clients_wake_each_other(self):
        a, b = self.client(), self.client()
        out = {}

        def side_b():
            b.set("ping", "from b")
            out["b_got"] = b.get("pong")  # blocks until a answers

        t = threading.Thread(target=side_b)
        t.start()
        self.assertEqual(a.get("ping"), b"from b")  # blocks until b sets it
        a.set("pong", "from a")
        t.join(timeout=60)
        self.assertFalse(t.is_alive())
        self.assertEqual(out["b_got"], b"from a")

    def test_wait_for_several_keys(self):
        s, other = self.client(), self.client()
        other.set("k1", "1")
        t = threading.Thread(target=lambda: other.set("k2", "2"))
        t.start()
        s.wait(["k1", "k2"])
        t.join()

    def test_num_keys_counts_init_key_and_delete(self):
        s = self.client(world_size=1)  # sends ADD "init/" 1
        before = s.num_keys()
        self.assertGreaterEqual(before, 1)  # init/ counts, as PyTorch's server
        s.set("nk_a", "1")
        s.set("nk_b", "1")
        self.assertEqual(s.num_keys(), before + 2)
        self.assertTrue(s.delete_key("nk_a"))
        self.assertFalse(s.delete_key("nk_a"))
        self.assertEqual(s.num_keys(), before + 1)

    def test_large_value(self):
        s = self.client()
        big = os.urandom(4 << 20)
        s.set("big", big)
        self.assertEqual(s.get("big"), big)


    @unittest.skipUnless(hasattr(TCPStore, "list_keys"), "this torch has no Store.list_keys (2.14+)")
    def test_list_keys_of_2_14(self):
        s = self.client()
        s.set("lk/a", "1")
        s.set("lk/b", "2")
        self.assertTrue({"lk/a", "lk/b"} <= set(s.list_keys()))

    @unittest.skipUnless(hasattr(TCPStore, "barrier"), "this torch has no Store.barrier (2.14+)")
    def test_barrier_of_2_14_releases_all_three_together(self):
        done = []
        def arrive(i):
            self.client().barrier("bar/three", 3, TIMEOUT)
            done.append(i)
        threads = [threading.Thread(target=arrive, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        threads[0].join(0.5)
        self.assertEqual(done, [])  # two of three arrived: nobody passes
        arrive(2)
        for t in threads:
            t.join(30)
        self.assertEqual(sorted(done), [0, 1, 2])


if __name__ == "__main__":
    unittest.main()
