"""Daemons started by the minicluster, tracked by PID in ``<state>/run/daemons.json``.

Every process is started in its own session and recorded with its argv, so ``down`` stops exactly the
processes ``up`` started (a recycled PID running something else is never signalled).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Daemon:
    role: str  # "munged", "slurmctld", "slurmd:<node>", "mariadb", "slurmdbd"
    pid: int
    argv: tuple[str, ...]
    log_path: str


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # comm is in parentheses and may contain spaces: split after the last ')'.
    return raw[raw.rindex(")") + 2 :].split()


def is_alive(pid: int) -> bool:
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def cmdline(pid: int) -> tuple[str, ...]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return ()
    return tuple(p.decode(errors="replace") for p in raw.split(b"\0") if p)


def session_id(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return int(fields[3]) if fields else None


def open_files(pid: int) -> list[str]:
    """Targets of ``pid``'s open file descriptors (empty when unreadable)."""
    fd_dir = Path(f"/proc/{pid}/fd")
    targets = []
    try:
        for fd in fd_dir.iterdir():
            try:
                targets.append(os.readlink(fd))
            except OSError:
                continue
    except OSError:
        return []
    return targets


def owns(daemon: Daemon) -> bool:
    """True when ``daemon.pid`` is alive and still runs the argv we started it with."""
    return is_alive(daemon.pid) and cmdline(daemon.pid)[: len(daemon.argv)] == daemon.argv


class Registry:
    """The JSON file of started daemons; written after every start and stop."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[str, Daemon]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except json.JSONDecodeError:
            log.warning("ignoring unreadable daemon registry %s", self.path)
            return {}
        return {role: Daemon(role=role, pid=d["pid"], argv=tuple(d["argv"]), log_path=d["log_path"]) for role, d in data.items()}

    def save(self, daemons: dict[str, Daemon]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({r: asdict(d) for r, d in daemons.items()}, indent=1))
        tmp.replace(self.path)


def start(role: str, argv: list[str], log_path: Path, env: dict[str, str] | None = None, user: str | None = None,
          prefix: list[str] | None = None) -> Daemon:
    """Start ``argv`` in the foreground mode of the daemon, detached in a new session. ``prefix`` (e.g.
    ``chroot <root>``) execs into ``argv``, so the recorded argv is what the process runs."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as out:
        proc = subprocess.Popen(
            [*(prefix or []), *argv],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
            user=user,
            close_fds=True,
        )
    return Daemon(role=role, pid=proc.pid, argv=tuple(argv), log_path=str(log_path))


def stop_pid(pid: int, timeout: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after ``timeout`` seconds; returns when the process is gone."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        _reap(pid)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            _reap(pid)
            if not is_alive(pid):
                return
            time.sleep(0.05)
    log.warning("process %d survived SIGKILL", pid)


def stop_child(proc: subprocess.Popen[Any], timeout: float = 30.0) -> int:
    """Stop a child of this process: SIGTERM (a daemon finishes its current step), SIGKILL after
    ``timeout`` seconds; returns its exit status."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def processes_in_sessions(sids: set[int]) -> list[int]:
    """PIDs of live processes whose session is one of ``sids`` (what our daemons forked)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            pid = int(entry.name)
            if session_id(pid) in sids and is_alive(pid):
                found.append(pid)
    return found
