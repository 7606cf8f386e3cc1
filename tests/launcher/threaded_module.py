"""A module that starts a thread at import: unfit for --preload (test_preload.py)."""
import threading
import time

threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
