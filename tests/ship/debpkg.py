"""Building and inspecting the .deb from a build tree (shared by the ship tests)."""
import os
import subprocess
import tempfile
from pathlib import Path


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise SystemExit(f"{name} is not set (run through ctest)")
    return value


def build_deb(out_dir: Path) -> Path:
    """`cpack -G DEB` of $ELASTIC_BUILD_DIR into out_dir; returns the .deb."""
    build = Path(env("ELASTIC_BUILD_DIR"))
    r = subprocess.run(["cpack", "-G", "DEB", "-B", str(out_dir), "--config",
                        str(build / "CPackConfig.cmake")],
                       cwd=build, capture_output=True, text=True, timeout=240)
    if r.returncode != 0:
        raise AssertionError(f"cpack failed (rc {r.returncode}):\n{r.stdout}\n{r.stderr}")
    debs = sorted(out_dir.glob("*.deb"))
    if len(debs) != 1:
        raise AssertionError(f"cpack made {debs}, expected one .deb:\n{r.stdout}")
    return debs[0]


def field(deb: Path, name: str) -> str:
    return subprocess.run(["dpkg-deb", "-f", str(deb), name], capture_output=True, text=True,
                          check=True).stdout.strip()


def contents(deb: Path) -> list[str]:
    """Paths in the package, absolute, files and links only."""
    out = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True,
                         check=True).stdout
    paths = []
    for line in out.splitlines():
        if line.startswith("d"):
            continue
        path = line.split(None, 5)[5].split(" -> ")[0]
        paths.append(path[1:] if path.startswith(".") else path)
    return paths


def tmpdir(prefix: str) -> tempfile.TemporaryDirectory:
    return tempfile.TemporaryDirectory(prefix=prefix)
