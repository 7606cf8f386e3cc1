#!/usr/bin/env python3
"""The docs and the code name the same options, both ways where it is decidable.

- every long option that `elasticrun --help` prints is in docs/user.md;
- every srun option of the plugin (the srun rows of common/option_table.cc) is in
  docs/user.md and in spank_elastic(8), and every `--elastic*` those name exists;
- every plugstack.conf key the plugin accepts (spank_plugin/options.cc,
  ParsePluginArgs) is in docs/admin.md, in the plugstack.conf.d snippet and in
  spank_elastic(8), and every key those document exists.
"""
import argparse
import re
import subprocess
import sys
from pathlib import Path


def man_text(path: Path) -> str:
    """roff source as plain-ish text: \\- is '-', font escapes dropped."""
    text = path.read_text()
    text = text.replace("\\-", "-")
    return re.sub(r"\\f[BIRP]", "", text)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--elasticrun", required=True)
    ap.add_argument("--source", required=True, type=Path)
    ap.add_argument("--man8", required=True, type=Path)
    a = ap.parse_args()
    src = a.source
    problems = []

    user = (src / "docs/user.md").read_text()
    admin = (src / "docs/admin.md").read_text()
    snippet = (src / "packaging/plugstack/elastic.conf.in").read_text()
    man8 = man_text(a.man8)

    # 1. elasticrun --help
    help_text = subprocess.run([a.elasticrun, "--help"], capture_output=True, text=True,
                               timeout=30, env={"PATH": "/usr/bin:/bin"}).stdout
    names = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*)", help_text))
    if len(names) < 10:
        problems.append(f"elasticrun --help lists only {sorted(names)}: is it the real help?")
    for name in sorted(names):
        dashed = name.replace("_", "-")
        if name != dashed and dashed in names:
            continue  # torchrun's underscored spelling of a dashed option
        if not re.search(re.escape(name) + r"(?![\w-])", user):
            problems.append(f"docs/user.md does not mention elasticrun's {name}")

    # 2. the plugin's srun options
    options_h = (src / "common/option_table.cc").read_text()
    table = re.findall(r'\{\s*"(elastic[a-z0-9-]*)"\s*,', options_h)
    if len(table) < 5:
        problems.append(f"found only {table} in common/option_table.cc's srun rows")
    spank_opts = {"--" + n for n in table}
    for opt in sorted(spank_opts):
        pattern = re.escape(opt) + r"(?![\w-])"
        if not re.search(pattern, user):
            problems.append(f"docs/user.md does not mention the plugin's {opt}")
        if not re.search(pattern, man8):
            problems.append(f"spank_elastic(8) does not mention the plugin's {opt}")
    # admin.md's "What users get" lists them all.
    users_get = admin[admin.find("## What users get"):]
    users_get = users_get[:users_get.find("\n\n", users_get.find("`--elastic"))]
    for opt in sorted(spank_opts):
        if not re.search(re.escape(opt) + r"(?![\w-])", users_get):
            problems.append(f"docs/admin.md's 'What users get' does not list the plugin's {opt}")
    for where, text in (("docs/user.md", user), ("docs/admin.md", admin), ("spank_elastic(8)", man8)):
        for opt in sorted(set(re.findall(r"(?<![\w-])(--elastic(?:-[a-z0-9]+)*)", text))):
            if opt not in spank_opts:
                problems.append(f"{where} mentions {opt}, which the plugin does not have")

    # 3. plugstack.conf keys
    options_cc = (src / "spank_plugin/options.cc").read_text()
    body = options_cc[options_cc.find("ParsePluginArgs("):]
    keys = set(re.findall(r'key == "([a-z_]+)"', body))
    if len(keys) < 3:
        problems.append(f"found only {sorted(keys)} as plugstack keys in spank_plugin/options.cc")
    for key in sorted(keys):
        pattern = r"(?<![\w-])" + re.escape(key) + "="
        for where, text in (("docs/admin.md", admin), ("the plugstack.conf.d snippet", snippet),
                            ("spank_elastic(8)", man8)):
            if not re.search(pattern, text):
                problems.append(f"{where} does not document the plugstack key {key}=")
    # Keys the snippet documents ("#   key=..." lines) must exist.
    for key in re.findall(r"^#\s+([a-z_]+)=", snippet, re.M):
        if key not in keys:
            problems.append(f"the plugstack.conf.d snippet documents {key}=, which the plugin rejects")

    # 4. Every option and key of the man page is an entry of its own: a missing .TP
    # rendered four of them inside the entry before (issue 20 item 7).
    roff = a.man8.read_text().splitlines()
    for before, line in zip([""] + roff, roff):
        entry = re.match(r"\.B[IR]? +((?:\\-\\-elastic|[a-z_]+=)[^ ]*)", line)
        if entry and before != ".TP":
            problems.append(f"spank_elastic(8): {entry.group(1).replace(chr(92), '')} is not an entry "
                            f"of its own (no .TP before it)")

    for p in problems:
        print("MISMATCH:", p)
    if not problems:
        print(f"docs match the code: {len(names)} elasticrun options, {len(spank_opts)} srun "
              f"options, {len(keys)} plugstack keys")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
