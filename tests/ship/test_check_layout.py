#!/usr/bin/python3
"""tests/ship/check_layout.py on small trees made here: a table of layouts and
what the check says about each (label unit)."""

import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_layout  # noqa: E402

# name, {path: text}, the problems expected (substrings, one per problem)
ROWS = [
    ("header used by production code",
     {"common/a.h": "", "common/a.cc": '#include "common/a.h"\n'}, []),
    ("header used by another component",
     {"common/a.h": "", "launcher/main.cc": '#include "common/a.h"\n'}, []),
    ("header only a test includes",
     {"store/util.h": "", "store/x_test.cc": '#include "store/util.h"\n'},
     ["store/util.h: no production source includes it"]),
    ("header that includes only itself",
     {"store/util.h": '#include "store/util.h"\n'}, ["store/util.h: no production source"]),
    ("production code includes testing/",
     {"launcher/a.cc": '#include "testing/fake_clock.h"\n'},
     ["launcher/a.cc: production code includes testing/fake_clock.h"]),
    ("a test includes testing/",
     {"launcher/a_test.cc": '#  include "testing/fake_clock.h"\n'}, []),
    ("folders that are not components are not checked",
     {"fuzz/f.h": "", "bench/b.h": ""}, []),
]


class CheckLayoutTest(unittest.TestCase):
    def test_rows(self):
        for name, files, expected in ROWS:
            with self.subTest(name), tempfile.TemporaryDirectory() as d:
                root = Path(d)
                for comp in check_layout.COMPONENTS:
                    (root / comp).mkdir()
                for path, text in files.items():
                    (root / path).parent.mkdir(parents=True, exist_ok=True)
                    (root / path).write_text(text)
                problems = check_layout.problems_in(root)
                self.assertEqual(len(problems), len(expected), problems)
                for want, got in zip(expected, problems):
                    self.assertIn(want, got)

    def test_this_repository(self):
        src = Path(__file__).resolve().parents[2]
        self.assertEqual(check_layout.problems_in(src), [])


if __name__ == "__main__":
    unittest.main()
