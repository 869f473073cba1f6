"""Single-instance lock: one engine per state directory (``<state_dir>/engine.lock``, ``flock``).

Where it sits: taken first by ``hops-slurm daemon`` and ``hops-slurm plan --once`` (a cron run while
the daemon is up is refused), released on exit; the kernel drops it if the process dies, so a crashed
engine never leaves a stale lock behind. The file holds the owner's PID for the error message.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from hops_slurm.errors import HopsError
from hops_slurm.rootfile import UnsafeDirectory, own_state_dir


class EngineLocked(HopsError):
    """Another engine holds the lock of this state directory."""


class InstanceLock:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._fd: int | None = None

    def acquire(self) -> InstanceLock:
        try:
            own_state_dir(self.path.parent)  # root's own: nobody planted a link at the lock's name
        except UnsafeDirectory as exc:
            raise HopsError(f"[paths] state_dir: {exc}: the engine writes nothing there") from None
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise EngineLocked(
                f"another hops-slurm engine (pid {owner}) holds {self.path}; stop it first "
                "(systemctl stop hops-slurm) or use another paths.state_dir") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def drop_inherited(self) -> None:
        """In a child forked by the lock's holder: close this process's copy of the lock's descriptor without
        unlocking (the lock belongs to the open file, which the parent keeps), so that the child, however long
        it lives, never holds the lock after the parent ends: an engine started then is not refused."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> InstanceLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
