"""The built wheel in a virtualenv outside the checkout, as a site installs it (shared by tests/test_packaging.py
and the live site test, tests/hops_slurm/site/test_site_live.py).

Offline: the build runs without isolation (setuptools, wheel and build are in the dev extra) on a copy of the
checkout's files; the new virtualenv gets the wheel with ``--no-deps`` and reads the dependencies from this
project's virtualenv (a ``.pth`` line naming its site-packages, after the venv's own: the checkout's own
editable install is not among them, since a ``.pth`` line adds a folder without reading the ``.pth`` files in it)."""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def copy_sources(dest: Path) -> None:
    """The files of the checkout that git would commit (tracked, and new ones not ignored); links stay links."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src, dst = ROOT / rel, dest / rel
        if not os.path.lexists(src):
            continue  # deleted in the working tree
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            dst.symlink_to(os.readlink(src))
        elif src.is_file():
            shutil.copy2(src, dst)


def build(work: Path) -> tuple[Path, Path]:
    """(wheel, sdist) built by ``python -m build`` from a copy of the checkout under ``work``."""
    copy_sources(work / "src")
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(work / "dist"), str(work / "src")],
                   cwd=work, capture_output=True, check=True, timeout=300)
    (wheel,) = (work / "dist").glob("hops_slurm-*.whl")
    (sdist,) = (work / "dist").glob("hops_slurm-*.tar.gz")
    return wheel, sdist


def install(wheel: Path, venv: Path) -> Path:
    """A new virtualenv at ``venv`` with only ``wheel`` installed in it; its ``hops-slurm`` command."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    (own,) = venv.glob("lib/python*/site-packages")
    (own / "project-deps.pth").write_text("".join(f"{p}\n" for p in site.getsitepackages()))
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--no-deps",
                    "--no-index", "--quiet", str(wheel)], check=True, capture_output=True, timeout=300)
    return venv / "bin" / "hops-slurm"
