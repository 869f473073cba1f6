"""Per-job places that a job's owner writes and the engine (root) reads: made and read with least privilege.

Where it sits: the profiler flow (:mod:`hops_slurm.engine.profiling`) gives each probing job a place
``<probe_dir>/<job_id>/`` and the engine gives each placed job a place ``<state_dir>/metrics/<job_id>/``
for its runtime records (:mod:`hops_slurm.engine.runtime_records`). The owner's processes (probes and the
runtime recorder run as the owner) write there; the engine only reads.

* :func:`make_place`: the parent is root's, 0711: writable by no one else, and other users can reach a
  place whose name (the job id) they know but cannot list the parent (which jobs have places); the
  place itself is a directory owned by the job's owner, mode 0700 (other users cannot read or plant
  files in it). Nothing a job runs needs to list the parent: the recorder and the probe open paths
  the engine gave them.
* :func:`read_owned`: opens one file of a place without following links and without blocking
  (``O_NOFOLLOW | O_NONBLOCK``; the place itself with ``O_DIRECTORY | O_NOFOLLOW``), then checks on the
  open descriptors that the place and the file belong to the job's owner and that the file is a
  regular file (no FIFO, device, directory or symlink; a hard link to someone else's file shows their
  uid and is refused), and reads at most ``cap`` bytes. Anything else raises :class:`UnsafeFile`.

Nothing the engine imports or executes comes from these places: it reads bytes and validates them as
JSON records (:mod:`profiler.records`).
"""

from __future__ import annotations

import os
import pwd
import stat
from dataclasses import dataclass
from pathlib import Path

from hops_slurm.errors import HopsError
from hops_slurm.rootfile import UnsafeDirectory, ensure_own_dir


#: the mode of a places' parent: search only for others (docs/security.md)
ROOT_MODE = 0o711
#: the mode of a place: its owner's alone
PLACE_MODE = 0o700


class UnsafeFile(HopsError):
    """A file in a job's place is not what the engine may read (wrong owner, not a regular file ...)."""


@dataclass(frozen=True)
class Owner:
    user: str
    uid: int
    gid: int


def owner_of(user: str) -> Owner:
    """The job owner's uid and primary gid on this host (HopsError if the name is unknown here)."""
    try:
        pw = pwd.getpwnam(user)
    except (KeyError, TypeError, ValueError):
        raise HopsError(f"its owner {user[:64]!r} is not a user on the engine's host") from None
    return Owner(user, pw.pw_uid, pw.pw_gid)


def _safe_name(job_id: str) -> str:
    if not job_id.isdigit() or len(job_id) > 20:
        raise UnsafeFile(f"job id {job_id[:30]!r} is not a number")
    return job_id


def make_root(root: Path) -> Path:
    """The parent of the places: created if missing, root's (the engine's) own, :data:`ROOT_MODE` (0711)."""
    try:
        ensure_own_dir(root, ROOT_MODE)  # owner and mode set on an O_NOFOLLOW descriptor (no swap in between)
    except UnsafeDirectory:
        raise UnsafeFile(f"{root} is not a directory") from None
    return root


def make_place(root: Path, job_id: str, owner: Owner) -> Path:
    """``<root>/<job_id>/``, a directory owned by ``owner``, mode 0700 (created, or taken over)."""
    make_root(root)
    place = root / _safe_name(job_id)
    try:
        os.mkdir(place, PLACE_MODE)
    except FileExistsError:
        st = os.lstat(place)  # only the engine writes in root: a non-directory here is its own leftover
        if not stat.S_ISDIR(st.st_mode):
            place.unlink()
            os.mkdir(place, PLACE_MODE)
    os.chown(place, owner.uid, owner.gid, follow_symlinks=False)
    os.chmod(place, PLACE_MODE)
    return place


def read_owned(place: Path, name: str, uid: int, *, offset: int = 0, cap: int = 1 << 20) -> bytes | None:
    """Up to ``cap`` bytes of ``place/name`` from ``offset``; None if the file does not exist (yet).
    Raises :class:`UnsafeFile` unless the place and the file are ``uid``'s and the file is regular."""
    return read_owned_at(place, name, uid, offset=offset, cap=cap)[0]


def read_owned_at(place: Path, name: str, uid: int, *, offset: int = 0,
                  cap: int = 1 << 20) -> tuple[bytes | None, int]:
    """:func:`read_owned` and the file's size when it was read (0 when it does not exist): a size below
    ``offset`` says the owner truncated the file since it was read up to ``offset``."""
    data, st = read_owned_stat(place, name, uid, offset=offset, cap=cap)
    return data, st.st_size if st is not None else 0


def read_owned_stat(place: Path, name: str, uid: int, *, offset: int = 0,
                    cap: int = 1 << 20) -> tuple[bytes | None, os.stat_result | None]:
    """:func:`read_owned` and the file's status as read (``fstat`` of the descriptor read; None when it
    does not exist): its size, and what identifies this version of it (:func:`stamp`)."""
    if "/" in name or name in ("", ".", ".."):
        raise UnsafeFile(f"bad file name {name!r}")
    try:
        dfd = os.open(place, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None, None
    except OSError as exc:  # ELOOP (a symlink), ENOTDIR
        raise UnsafeFile(f"{place} is not the job's directory ({exc.strerror})") from None
    try:
        st = os.fstat(dfd)
        if st.st_uid != uid:
            raise UnsafeFile(f"{place} belongs to uid {st.st_uid}, not the job's owner (uid {uid})")
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY, dir_fd=dfd)
        except FileNotFoundError:
            return None, None
        except OSError as exc:
            raise UnsafeFile(f"{place / name} cannot be opened safely ({exc.strerror})") from None
        try:
            fst = os.fstat(fd)
            if not stat.S_ISREG(fst.st_mode):
                raise UnsafeFile(f"{place / name} is not a regular file")
            if fst.st_uid != uid:
                raise UnsafeFile(f"{place / name} belongs to uid {fst.st_uid}, not the job's owner (uid {uid})")
            return os.pread(fd, max(0, cap), offset) if offset <= fst.st_size else b"", fst
        finally:
            os.close(fd)
    finally:
        os.close(dfd)


#: what identifies one version of a file: (device, inode, size, mtime ns, ctime ns); any write, truncation,
#: replacement, chmod or chown changes it (the kernel sets ctime; its owner cannot set it back)
Stamp = tuple[int, int, int, int, int]


def stamp(st: os.stat_result) -> Stamp:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
