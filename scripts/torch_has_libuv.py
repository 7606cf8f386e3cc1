"""Exit 0 if this python's torch can create a libuv TCPStore, 1 if it was built
without libuv (Debian's python3-torch 2.x), 2 if torch has no TCPStore libuv
choice at all (1.13: nothing to work around, so also 0)."""
import sys

try:
    from torch.distributed import TCPStore
except Exception as e:  # no torch: nothing to decide here
    print(f"torch_has_libuv: {e}", file=sys.stderr)
    sys.exit(0)
try:
    TCPStore("127.0.0.1", 0, 1, True, use_libuv=True).set("k", "v")
except TypeError:
    sys.exit(0)  # 1.13: no use_libuv argument, no libuv
except Exception as e:
    sys.exit(1 if "libuv" in str(e) else 0)
sys.exit(0)
