"""Debian roots that hold a newer Slurm (24.11 from trixie, 26.05 from sid) for the minicluster.

Where it sits: :class:`~hops_slurm.tools.minicluster.cluster.Minicluster` asks :func:`ensure_root` for the root
of its spec's release before ``up`` (22.05 needs none: it is the host's Debian 12 packages). The root is
built once with ``debootstrap --variant=minbase`` plus Debian's Slurm packages, kept under
``/var/lib/hops-slurm/roots/<release>`` (``$HOPS_ROOTS_DIR`` overrides), and reused while healthy: a
stamp file names the release and ``slurmctld -V`` inside the root must print it. A broken root (no
stamp, wrong version, a build that died) is removed and built again. Builds take an exclusive lock per
release (two ``up`` at once build once) and write into a temporary directory renamed into place at the
end, so a reader never sees half a root. The build log is ``<roots>/<release>.build.log``.

How the daemons and clients use it: see :mod:`hops_slurm.tools.minicluster.chroot` (mounts, wrapper scripts).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from hops_slurm.errors import MiniclusterError

log = logging.getLogger(__name__)

HOST_RELEASE = "22.05"


@dataclass(frozen=True)
class Suite:
    """The Debian suite that ships one Slurm release."""

    release: str  # "24.11"
    suite: str  # "trixie"
    check_valid_until: bool = True  # sid's Release file is often past its Valid-Until on the mirror


SUITES = {"24.11": Suite("24.11", "trixie"), "26.05": Suite("26.05", "sid", check_valid_until=False)}
RELEASES = (HOST_RELEASE, *SUITES)

#: Installed inside every root: the daemons and clients, the plugins (job_submit_lua, cons_tres, gres),
#: slurmdbd for accounting, and the shared libraries the host's Python 3.11 needs when a job runs the
#: project's interpreter inside the root (see chroot.py: the interpreter itself is bind-mounted).
ROOT_PACKAGES = (
    "slurmctld", "slurmd", "slurm-client", "slurmdbd", "munge", "slurm-wlm-basic-plugins",
    "libexpat1", "libffi8", "libsqlite3-0", "zlib1g", "liblzma5", "libbz2-1.0", "libssl3t64",
)
STAMP = ".hops-slurm-root.json"
STAMP_VERSION = 1


def roots_dir() -> Path:
    return Path(os.environ.get("HOPS_ROOTS_DIR", "/var/lib/hops-slurm/roots"))


def mirror() -> str:
    return os.environ.get("HOPS_DEBIAN_MIRROR", "http://deb.debian.org/debian")


def root_path(release: str) -> Path:
    return roots_dir() / release


def build_log(release: str) -> Path:
    return roots_dir() / f"{release}.build.log"


def suite_of(release: str) -> Suite:
    try:
        return SUITES[release]
    except KeyError:
        raise MiniclusterError(
            f"Slurm {release} has no Debian root here; supported: {', '.join(RELEASES)}"
        ) from None


# ----- health ----------------------------------------------------------------------------------------
def slurm_version(root: Path) -> str | None:
    """``slurmctld -V`` inside ``root`` (e.g. ``24.11.5``), or None when it does not run."""
    if not (root / "usr" / "sbin" / "slurmctld").exists():
        return None
    try:
        out = subprocess.run(["chroot", str(root), "/usr/sbin/slurmctld", "-V"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = out.stdout.split()  # "slurm 24.11.5" upstream, "slurm-wlm 24.11.5" from Debian
    return words[1] if out.returncode == 0 and len(words) == 2 and words[0].startswith("slurm") else None


def healthy(root: Path, release: str) -> bool:
    """The stamp names ``release`` and this stamp format, and Slurm inside the root is that release."""
    try:
        stamp = json.loads((root / STAMP).read_text())
    except (OSError, ValueError):
        return False
    if stamp.get("release") != release or stamp.get("stamp_version") != STAMP_VERSION:
        return False
    if sorted(stamp.get("packages", [])) != sorted(ROOT_PACKAGES):
        return False
    version = slurm_version(root)
    return version is not None and version.startswith(release + ".")


def mounts_under(path: Path) -> list[str]:
    """Mount points at or below ``path`` (from /proc/self/mountinfo)."""
    prefix = str(path.resolve()) if path.exists() else str(path)
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point == prefix or point.startswith(prefix + "/"):
            found.append(point)
    return found


def _remove(tree: Path) -> None:
    """rm -rf a root, refusing while anything is mounted inside it (rmtree would walk into a mount)."""
    if not tree.exists():
        return
    mounted = mounts_under(tree)
    if mounted:
        raise MiniclusterError(
            f"cannot rebuild {tree}: still mounted inside it: {', '.join(mounted)}; "
            "run `hops-slurm minicluster down` for the clusters that use it"
        )
    shutil.rmtree(tree)


# ----- build -----------------------------------------------------------------------------------------
@contextmanager
def _locked(release: str) -> Iterator[None]:
    roots_dir().mkdir(parents=True, exist_ok=True)
    with open(roots_dir() / f"{release}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def ensure_debootstrap() -> None:
    if shutil.which("debootstrap") or Path("/usr/sbin/debootstrap").exists():
        return
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    log.warning("installing Debian package debootstrap (to build Slurm roots)")
    for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "debootstrap"]):
        result = subprocess.run(argv, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            raise MiniclusterError(f"`{' '.join(argv)}` failed ({result.returncode}):\n{result.stderr[-2000:]}")


def ensure_root(release: str) -> Path:
    """The healthy root of ``release``, built (or rebuilt) first when needed. Root only."""
    suite = suite_of(release)
    root = root_path(release)
    if healthy(root, release):
        return root
    if os.geteuid() != 0:
        raise MiniclusterError(f"the Slurm {release} root {root} is missing or broken; building it needs root")
    with _locked(release):
        if healthy(root, release):  # built by whoever held the lock before us
            return root
        ensure_debootstrap()
        logfile = build_log(release)
        started = time.monotonic()
        log.warning("building the Slurm %s root (Debian %s) in %s; log %s", release, suite.suite, root, logfile)
        if root.exists():
            log.warning("removing broken root %s", root)
            _remove(root)
        work = root.with_name(root.name + ".building")
        _remove(work)
        with open(logfile, "w") as out:
            _build(suite, work, out, logfile)
        work.rename(root)
        if not healthy(root, release):
            raise MiniclusterError(f"the Slurm {release} root {root} was built but does not run slurmctld {release}; see {logfile}")
        log.warning("Slurm %s root ready in %.0f s", release, time.monotonic() - started)
        return root


def _step(argv: list[str], out, logfile: Path, what: str, env: dict[str, str] | None = None) -> None:  # type: ignore[no-untyped-def]
    out.write(f"$ {' '.join(argv)}\n")
    out.flush()
    result = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, env=env, timeout=1800)
    if result.returncode != 0:
        raise MiniclusterError(f"{what} failed ({result.returncode}); see {logfile}")


def _build(suite: Suite, work: Path, out, logfile: Path) -> None:  # type: ignore[no-untyped-def]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive", LC_ALL="C")
    _step(["debootstrap", "--variant=minbase", suite.suite, str(work), mirror()], out, logfile,
          f"debootstrap of Debian {suite.suite}", env)
    apt_conf = work / "etc" / "apt" / "apt.conf.d" / "99hops-slurm"
    lines = ['APT::Install-Recommends "false";', 'APT::Install-Suggests "false";']
    if not suite.check_valid_until:
        lines.append('Acquire::Check-Valid-Until "false";')
    apt_conf.write_text("\n".join(lines) + "\n")
    # No service starts from package scripts inside the root (there is no init; the minicluster starts
    # the daemons itself).
    policy = work / "usr" / "sbin" / "policy-rc.d"
    policy.write_text("#!/bin/sh\nexit 101\n")
    policy.chmod(0o755)
    shutil.copyfile("/etc/resolv.conf", work / "etc" / "resolv.conf")
    _step(["chroot", str(work), "apt-get", "update", "-q"], out, logfile, f"apt-get update in the {suite.suite} root", env)
    _step(["chroot", str(work), "apt-get", "install", "-y", "-q", *ROOT_PACKAGES], out, logfile,
          f"apt-get install of Slurm in the {suite.suite} root", env)
    _step(["chroot", str(work), "apt-get", "clean"], out, logfile, "apt-get clean", env)
    version = slurm_version(work) or "unknown"
    (work / STAMP).write_text(json.dumps({
        "stamp_version": STAMP_VERSION, "release": suite.release, "suite": suite.suite, "slurm": version,
        "packages": list(ROOT_PACKAGES), "mirror": mirror(), "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }, indent=1) + "\n")
