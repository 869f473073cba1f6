"""The partition file ``hops-partitions``: the Hops partitions of ``[slurm] partitions``, for the submit hook.

Where it sits: the daemon (:meth:`hops_slurm.engine.engine.Engine.open`, and at every refresh when the file
no longer says what the configuration does) writes it into ``[engine] hook_dir`` (unset: the directory of
``[engine] offer_file``; neither set: nowhere), beside the hook module ``hops_submit.lua``, which reads it
to tell a Hops job from any other (docs/admin-guide.md, "Hops partitions"). ASCII, at most
:data:`MAX_BYTES` bytes::

    hops-partitions 1
    partition <name>        (one line per Hops partition; the first is the default)

Written as root beside slurmctld's own files, so hostile surroundings are refused, each with one line: the
directory must be a real directory owned by root (or by the user the daemon runs as) and writable by no
one else; the file is written as root writes every file others read (:func:`hops_slurm.rootfile.write_file`:
a fresh temporary name, ``O_EXCL|O_NOFOLLOW``, never through a link someone planted, in the directory
checked on its descriptor) and renamed over the old one, so the hook reads the old file or the new one.
:func:`missing` names the configured partitions Slurm does not have (``scontrol show partition``, read by
:mod:`hops_slurm.slurm.partitions`).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Collection, Sequence
from pathlib import Path

from hops_slurm.errors import HopsError
from hops_slurm.rootfile import UnsafeDirectory, write_file

FILE = "hops-partitions"
HEADER = "hops-partitions 1"
MAX_BYTES = 4096
MAX_PARTITIONS = 64
NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")


class PartitionFileError(HopsError):
    """The partition file cannot be written where it belongs (one line naming the problem)."""


def render(partitions: Sequence[str]) -> str:
    """The file's text for ``partitions`` (the default first)."""
    if not partitions or len(partitions) > MAX_PARTITIONS:
        raise PartitionFileError(f"{FILE}: between 1 and {MAX_PARTITIONS} partitions, got {len(partitions)}")
    bad = [p for p in partitions if not NAME.fullmatch(p)]
    if bad:
        raise PartitionFileError(f"{FILE}: {bad[0][:80]!r} is not a partition name ([A-Za-z0-9._-], at most 64)")
    text = HEADER + "\n" + "".join(f"partition {p}\n" for p in partitions)
    if len(text) > MAX_BYTES:
        raise PartitionFileError(f"{FILE}: {len(text)} bytes, more than the hook reads ({MAX_BYTES})")
    return text


def parse(data: bytes) -> tuple[str, ...]:
    """The partitions a file holds, read as the hook reads it (``hooks/hops_submit.lua: read_partitions``),
    byte for byte: lines are the runs of bytes between newlines (empty ones skipped), the first exactly
    the header, every other exactly ``partition <name>`` (one space, nothing after: no CR, tab or blank),
    no name twice, 1 to :data:`MAX_PARTITIONS` of them. PartitionFileError naming the problem otherwise
    (``test_the_python_reading_is_the_hooks_reading_on_odd_inputs``)."""
    if not data:
        raise PartitionFileError(f"{FILE} is empty")
    if len(data) > MAX_BYTES:
        raise PartitionFileError(f"{FILE} is longer than {MAX_BYTES} bytes")
    lines = [line for line in data.split(b"\n") if line]
    if not lines:
        raise PartitionFileError(f"{FILE} is empty")
    if lines[0] != HEADER.encode():
        raise PartitionFileError(f"{FILE}: the first line is not {HEADER!r}")
    out: list[str] = []
    for k, line in enumerate(lines[1:], start=2):
        m = _LINE.fullmatch(line)
        if m is None:
            shown = "not ASCII" if not line.isascii() else "not 'partition <name>'"
            raise PartitionFileError(f"{FILE} line {k}: {shown}")
        name = m[1].decode("ascii")
        if name in out:
            raise PartitionFileError(f"{FILE} line {k}: names partition {name} twice")
        if len(out) >= MAX_PARTITIONS:
            raise PartitionFileError(f"{FILE}: more than {MAX_PARTITIONS} partitions")
        out.append(name)
    if not out:
        raise PartitionFileError(f"{FILE}: between 1 and {MAX_PARTITIONS} partitions, got 0")
    return tuple(out)


#: a partition line exactly as the hook matches it (``^partition ([A-Za-z0-9._%-]+)$``, at most 64)
_LINE = re.compile(rb"partition ([A-Za-z0-9._-]{1,64})")


def directory(hook_dir: Path | None, offer_file: Path | None) -> Path | None:
    """Where the file goes: ``hook_dir``, else the offer file's directory, else nowhere (None)."""
    if hook_dir is not None:
        return hook_dir
    return offer_file.parent if offer_file is not None else None


def check_directory(where: Path) -> None:
    """PartitionFileError unless ``where`` is a real directory owned by root (or this process's user) and
    writable by its owner only."""
    try:
        st = os.lstat(where)
    except OSError as exc:
        raise PartitionFileError(f"{where}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise PartitionFileError(f"{where} is not a directory (a link or a file is not followed)")
    if st.st_uid not in (0, os.geteuid()):
        raise PartitionFileError(f"{where} is owned by uid {st.st_uid}, not by root: {FILE} is not written there")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise PartitionFileError(f"{where} is writable by group or others (mode {stat.S_IMODE(st.st_mode):o}): "
                                 f"{FILE} is not written there")


def current(path: Path) -> bytes | None:
    """The file's bytes as they are (None: missing, a link, or unreadable)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # a FIFO there cannot block
    except OSError:
        return None
    try:
        return os.read(fd, MAX_BYTES + 1)
    finally:
        os.close(fd)


def publish(where: Path, partitions: Sequence[str]) -> bool:
    """Write the file into ``where`` unless it already says the same (True: written). Atomic and never
    through a link: :func:`hops_slurm.rootfile.write_file`, whose directory is checked again on the
    descriptor it writes through (a directory swapped for another after :func:`check_directory` is
    checked there too)."""
    text = render(partitions).encode("ascii")
    check_directory(where)
    if current(where / FILE) == text:
        return False
    try:
        write_file(where, FILE, text)
    except UnsafeDirectory as exc:
        raise PartitionFileError(f"{exc}: {FILE} is not written there") from None
    return True


def missing(partitions: Sequence[str], known: Collection[str]) -> list[str]:
    """The configured partitions Slurm does not have."""
    return [p for p in partitions if p not in known]


__all__ = ["FILE", "HEADER", "MAX_BYTES", "PartitionFileError", "check_directory", "current", "directory",
           "missing", "parse", "publish", "render"]
