"""Preloaded by test_preload's end test: an object whose __del__ would print if a
worker forked from the zygote tore the preloaded modules down (it must not: each
torn-down page is copied; zygote.py _finish)."""


class _Noisy:
    def __del__(self):
        print("del: a preloaded module was torn down in pid", __import__("os").getpid(), flush=True)


_kept = _Noisy()
