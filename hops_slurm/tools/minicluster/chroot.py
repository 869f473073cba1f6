"""Run a minicluster's daemons and clients inside a Slurm root (24.11, 26.05): mounts, users, wrappers.

Where it sits: :class:`~hops_slurm.tools.minicluster.cluster.Minicluster` of a spec whose ``slurm`` is not the
host's 22.05 holds one :class:`RootRuntime`. ``up`` calls :meth:`RootRuntime.enter` (bind mounts, the
host's ``/etc/hosts`` and users copied in, wrapper scripts written), starts every daemon with
:meth:`prefix` (``chroot <root>``), and ``down`` calls :meth:`leave`, which unmounts exactly the mounts
recorded in ``<state>/run/mounts.json``.

Paths are the same inside and outside the root: the state directory, ``/tmp`` and the project checkout
are bind-mounted at their own paths (the checkout read-only), so slurm.conf, job scripts, ``-D`` work
directories and job output files need no translation. Jobs that run the project's Python (profiling
probes, the demo's training) find the host's interpreter, bind-mounted read-only with its standard
library; the shared libraries it links are installed in the root (roots.py).

Clients: ``<state>/bin`` holds one wrapper script per Slurm client (``sbatch``, ``squeue``,
``scontrol``...) that runs the root's client under ``chroot`` in the caller's working directory with
this cluster's ``SLURM_CONF``. With that directory first on ``PATH`` (``hops-slurm minicluster env``),
the engine's command-line backend, the tests and the demo run Slurm commands unchanged. ``chroot``
needs root; another user's command goes through :meth:`user_argv` (``chroot --userspec``).
"""

from __future__ import annotations

import json
import logging
import os
import pwd
import shlex
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

from hops_slurm.errors import MiniclusterError

log = logging.getLogger(__name__)

CHROOT = "/usr/sbin/chroot"
CLIENTS = ("sbatch", "squeue", "scontrol", "scancel", "sinfo", "sacct", "sacctmgr", "srun", "salloc", "sprio",
           "sshare", "sstat", "sreport", "sdiag")
#: where the installed code is: the folder holding the hops_slurm package (the checkout for ``make install``,
#: site-packages for a wheel) and the virtualenv; both are bound read-only into a root
INSTALL = tuple(sorted({Path(resources.files("hops_slurm").joinpath("__init__.py")).resolve().parents[1], Path(sys.prefix)},
                       key=lambda p: len(p.parts)))  # a folder before one inside it, which then comes with it


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def is_mounted(point: Path) -> bool:
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        if line.split()[4].replace("\\040", " ") == str(point):
            return True
    return False


class RootRuntime:
    """One cluster's use of one root: what it mounted, its wrappers and how its processes enter."""

    def __init__(self, root: Path, release: str, state: Path, conf_path: Path) -> None:
        self.root = root
        self.release = release
        self.state = state
        self.conf_path = conf_path
        self.bin_dir = state / "bin"
        self.mounts_file = state / "run" / "mounts.json"

    # ----- paths -----------------------------------------------------------------------------------
    def inside(self, path: Path) -> Path:
        """Where the host sees a path of the root (``/var/tmp/x`` -> ``<root>/var/tmp/x``)."""
        return self.root / str(path).lstrip("/")

    def prefix(self, userspec: str | None = None) -> list[str]:
        """The command prefix that runs a program inside the root (as root, or as ``uid:gid``)."""
        return [CHROOT, *([f"--userspec={userspec}"] if userspec else []), str(self.root)]

    def user_argv(self, user: str, argv: list[str], cwd: Path | None = None) -> list[str]:
        """``argv`` (a Slurm client) as ``user`` inside the root, against this cluster."""
        self.sync_users()
        pw = pwd.getpwnam(user)
        workdir = str(cwd or Path.cwd())
        if not self.inside(Path(workdir)).is_dir():
            workdir = "/"
        return [*self.prefix(f"{pw.pw_uid}:{pw.pw_gid}"), "/usr/bin/env", "-C", workdir, f"SLURM_CONF={self.conf_path}",
                "PATH=/usr/sbin:/usr/bin:/sbin:/bin", f"HOME={pw.pw_dir}", f"USER={user}", f"LOGNAME={user}", *argv]

    def root_uid(self, name: str) -> tuple[int, int]:
        """uid/gid of ``name`` in the root's /etc/passwd (e.g. its ``munge`` user)."""
        for line in self.inside(Path("/etc/passwd")).read_text().splitlines():
            f = line.split(":")
            if len(f) >= 4 and f[0] == name:
                return int(f[2]), int(f[3])
        raise MiniclusterError(f"user {name!r} missing in {self.inside(Path('/etc/passwd'))}; the root is broken: remove {self.root}")

    # ----- enter / leave ---------------------------------------------------------------------------
    def binds(self) -> list[tuple[Path, bool]]:
        """(host path, read-only) to bind-mount at the same path inside the root, in order."""
        candidates = [(Path("/tmp"), False), (self.state, False), *((p, True) for p in INSTALL), *self._interpreter()]
        wanted: list[tuple[Path, bool]] = [(Path("/proc"), False)]
        for path, ro in candidates:  # a path inside one already bound comes with it
            if path.exists() and not any(path == p or p in path.parents for p, _ in wanted[1:]):
                wanted.append((path, ro))
        return wanted

    @staticmethod
    def _interpreter() -> list[tuple[Path, bool]]:
        """What the project's Python needs inside the root, read-only: its whole installation when it
        has its own prefix (pyenv, /opt, /usr/local...), else (Debian's /usr) the standard library and
        the binary (statically linked to libpython; the libraries it links are in ROOT_PACKAGES)."""
        base = Path(sys.base_prefix)
        if base != Path("/usr"):
            return [(base, True)]
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        return [(base / "lib" / version, True), (Path(os.path.realpath(sys.executable)), True)]

    def enter(self) -> None:
        """Mount what the cluster needs inside the root (each mount once per cluster), copy in the host's
        /etc/hosts and users, link the project's interpreter, write the client wrappers."""
        shutil.copyfile("/etc/hosts", self.inside(Path("/etc/hosts")))
        self.sync_users()
        self._link_interpreter()
        mounted = self._load()
        for src, ro in self.binds():
            dst = self.inside(src)
            if str(dst) in mounted and is_mounted(dst):
                continue
            if src.is_dir():
                dst.mkdir(parents=True, exist_ok=True)
            else:
                dst.parent.mkdir(parents=True, exist_ok=True)
                dst.touch(exist_ok=True)
            result = _run(["mount", "--bind", str(src), str(dst)])
            if result.returncode != 0:
                raise MiniclusterError(f"`mount --bind {src} {dst}` failed: {result.stderr.strip()}")
            mounted = [m for m in mounted if m != str(dst)] + [str(dst)]
            self._save(mounted)
            if ro:
                result = _run(["mount", "-o", "remount,bind,ro", str(dst)])
                if result.returncode != 0:
                    raise MiniclusterError(f"making {dst} read-only failed: {result.stderr.strip()}")
        self.write_wrappers()

    def leave(self) -> list[str]:
        """Unmount, newest first, what :meth:`enter` mounted; returns the mount points released."""
        mounted = self._load()
        released = []
        for point in reversed(mounted):
            if is_mounted(Path(point)):
                result = _run(["umount", point])
                if result.returncode != 0:
                    log.warning("umount %s: %s; detaching it lazily", point, result.stderr.strip())
                    result = _run(["umount", "-l", point])
                if result.returncode != 0:
                    raise MiniclusterError(f"`umount {point}` failed: {result.stderr.strip()}")
                released.append(point)
            mounted.remove(point)
            self._save(mounted)
        return released

    def _load(self) -> list[str]:
        try:
            return list(json.loads(self.mounts_file.read_text()))
        except (FileNotFoundError, ValueError):
            return []

    def _save(self, mounted: list[str]) -> None:
        self.mounts_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.mounts_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(mounted))
        tmp.replace(self.mounts_file)

    # ----- users, interpreter, wrappers ------------------------------------------------------------
    def sync_users(self) -> None:
        """Append the host's ordinary users (uid 1000-65533) and their groups that the root lacks, so
        slurmctld and slurmd inside it resolve job owners. Root's own system users stay as they are."""
        for name, keep in (("passwd", lambda f: 1000 <= int(f[2]) < 65534), ("group", lambda f: 1000 <= int(f[2]) < 65534)):
            target = self.inside(Path("/etc") / name)
            have = {line.split(":")[0] for line in target.read_text().splitlines() if line}
            add = []
            for line in Path("/etc", name).read_text().splitlines():
                f = line.split(":")
                if len(f) > 3 and f[2].isdigit() and keep(f) and f[0] not in have:
                    add.append(line)
            if add:
                with open(target, "a") as fh:
                    fh.write("\n".join(add) + "\n")

    def _link_interpreter(self) -> None:
        """Recreate inside the root the symlinks that lead from the venv's python to the real binary
        (e.g. /usr/bin/python3 -> python3.11); the binary itself is bind-mounted by :meth:`binds`."""
        link = Path(sys.executable)
        for _ in range(10):
            if not link.is_symlink():
                return
            target = os.readlink(link)
            if not any(link == p or p in link.parents for p in INSTALL):
                dst = self.inside(link)
                if not dst.is_symlink() and not dst.exists():
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    dst.symlink_to(target)
            link = (link.parent / target) if not os.path.isabs(target) else Path(target)

    def write_wrappers(self) -> None:
        self.bin_dir.mkdir(parents=True, exist_ok=True)
        root = shlex.quote(str(self.root))
        conf = shlex.quote(str(self.conf_path))
        for client in CLIENTS:
            text = "\n".join([
                "#!/bin/sh",
                f"# Written by hops-slurm minicluster: Slurm {self.release}'s {client}, run inside {self.root}.",
                "# Already inside the root (a job step: PATH is the submitter's): run the client itself.",
                f'[ -x {root}/usr/bin/{client} ] || exec /usr/bin/{client} "$@"',
                'if [ "$(id -u)" != 0 ]; then',
                f'  echo "{client}: Slurm {self.release} runs inside {self.root} and needs chroot (root);'
                f' as another user: chroot --userspec=USER {self.root} {client} ..." >&2',
                "  exit 1",
                "fi",
                'd=$(pwd -P 2>/dev/null) || d=/',
                f'[ -d {root}"$d" ] || d=/',
                f'exec {CHROOT} {root} /usr/bin/env -C "$d" SLURM_CONF={conf} /usr/bin/{client} "$@"',
                "",
            ])
            path = self.bin_dir / client
            path.write_text(text)
            path.chmod(0o755)
