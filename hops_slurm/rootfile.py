"""Files root writes for others to read (job environment files, the submit hook's offer): never through a
link, never into a directory root does not own.

Where it sits: :func:`hops_slurm.slurm.placement.write_job_env` (``<env_dir>/<job>.env``) and
:func:`hops_slurm.engine.offer_file.publish` (``hops-offer`` beside the submit hook) write through
:func:`write_file`. The directory is opened once (links in its path are the administrator's and are
followed) and checked on the open descriptor: it must belong to the engine's own user (root) and be
writable by no group or other user, so nobody else can have planted a link or a FIFO in it, nor swap one
in between the check and the write. The file is created exclusively under a temporary name
(``O_CREAT | O_EXCL | O_NOFOLLOW``; a leftover temporary file is removed first, never opened), written,
given its mode and renamed over the final name in the same directory (``rename`` replaces whatever was
there, a link or a FIFO included, without following it; an empty directory there is removed first).
Readers see the old file or the new one, never a part.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from hops_slurm.errors import HopsError


class UnsafeDirectory(PermissionError):
    """The directory is not root's own (another owner, or writable by a group or other users)."""


class BadName(HopsError):
    """A file name with a slash, empty, or a dot name."""


def _name(name: str) -> str:
    if not name or "/" in name or name in (".", "..") or "\0" in name:
        raise BadName(f"bad file name {name[:64]!r}")
    return name


def ensure_own_dir(path: Path, mode: int) -> None:
    """Create ``path`` (and its parents) if missing; a directory of another owner is taken over (chown to
    the engine's user, as :func:`hops_slurm.engine.userfiles.make_root` does for the places' parents);
    its mode becomes ``mode``. A link or a non-directory at ``path`` raises :class:`UnsafeDirectory`.
    The owner and mode are changed on a descriptor opened without following a link, so a directory
    swapped for a link after the check never makes root chown or chmod the link's target."""
    path.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        raise UnsafeDirectory(f"{path} is not a directory (a link is not followed)") from None
    try:
        if os.fstat(fd).st_uid != os.geteuid():
            os.fchown(fd, os.geteuid(), os.getegid())
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def open_own_dir(path: Path) -> int:
    """A descriptor of the directory ``path``, checked on the descriptor: owned by the engine's user and
    writable by no group or other user (else :class:`UnsafeDirectory`, the descriptor closed)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    st = os.fstat(fd)
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        os.close(fd)
        raise UnsafeDirectory(f"{path} must belong to uid {os.geteuid()} and be writable by no one else "
                              f"(uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):04o})")
    return fd


def own_state_dir(path: Path) -> None:
    """The engine's state directory (``[paths] state_dir``): created if missing (0711), else it must already
    be the engine's own and writable by no one else (:class:`UnsafeDirectory` naming it): root writes a
    lock, a heartbeat, a log and databases there by name, and a link another user planted in a directory
    they own or can write would take those writes anywhere (truncating, appending to or creating any file).
    Links in ``path`` are the administrator's and are followed; search for others is added (users reach
    their places below it), on the descriptor checked."""
    try:
        path.mkdir(mode=0o711, parents=True)
    except FileExistsError:
        pass
    fd = open_own_dir(path)
    try:
        os.fchmod(fd, stat.S_IMODE(os.fstat(fd).st_mode) | 0o011)
    finally:
        os.close(fd)


def write_file(directory: Path, name: str, data: bytes, mode: int = 0o644) -> None:
    """``directory/name`` becomes ``data`` with ``mode``, atomically (see the module docstring)."""
    name = _name(name)
    tmp = f".{name}.tmp"
    dfd = open_own_dir(directory)
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(tmp, flags, mode, dir_fd=dfd)
        except FileExistsError:  # a leftover of a crash: removed (unlink does not follow a link), never opened
            os.unlink(tmp, dir_fd=dfd)
            fd = os.open(tmp, flags, mode, dir_fd=dfd)
        try:
            os.fchmod(fd, mode)  # not the umask's
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        try:
            os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except IsADirectoryError:  # a directory where the file goes: removed if empty, else refused
            os.rmdir(name, dir_fd=dfd)
            os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    finally:
        os.close(dfd)


def remove_file(directory: Path, name: str) -> bool:
    """Remove ``directory/name`` (the name itself, never what a link points to); True if it was there. A
    directory that is not root's own is left alone (:class:`UnsafeDirectory`)."""
    name = _name(name)
    try:
        dfd = open_own_dir(directory)
    except FileNotFoundError:
        return False
    try:
        os.unlink(name, dir_fd=dfd)
        return True
    except FileNotFoundError:
        return False
    finally:
        os.close(dfd)


__all__ = ["BadName", "UnsafeDirectory", "ensure_own_dir", "open_own_dir", "own_state_dir", "remove_file", "write_file"]
