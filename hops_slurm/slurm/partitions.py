"""The partitions' limits as slurmctld keeps them: MaxNodes, MaxTime, State and the partition's QOS.

Where it sits: read by :class:`hops_slurm.slurm.assoc.GovernanceSource` with the associations and QOS
(once a minute at most), from slurmctld through ``scontrol show partition --oneliner``: the one form
22.05, 24.11 and 26.05 print alike (22.05's ``scontrol`` has no ``--json``; the recordings of all three
are in ``tests/data/slurm-output/<release>/scontrol-show-partition.txt``). Partitions need no slurmdbd:
a cluster without accounting still has them. :func:`hops_slurm.slurm.assoc.limits_for` turns them into
planner input with Slurm's own reason names (``PartitionNodeLimit``, ``PartitionTimeLimit``,
``PartitionDown``, ``PartitionInactive``); a partition's ``QOS=`` brings that QOS's GPU limits (its
``MaxTRES``, ``MaxTRESPerNode``, ``MaxTRESPU``, ``GrpTRES``...) to every job of the partition, as Slurm
applies them. Pure parsing; nothing here runs a command.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PARTITION_ARGV = ["scontrol", "show", "partition", "--oneliner"]

#: bounds on what is read (hostile or broken output must not grow without end)
MAX_PARTITIONS = 10_000
MAX_LINE = 65_536
MAX_NODES = 10_000_000
MAX_SECONDS = 10.0 * 365 * 86400  # a limit beyond ten years is none
_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
_DURATION = re.compile(r"(?:(\d{1,6})-)?(\d{1,6})(?::(\d{1,6}))?(?::(\d{1,6}))?")
UNLIMITED = ("UNLIMITED", "INFINITE", "NONE", "N/A", "")


class PartitionOutputError(ValueError):
    """Output that is not what ``scontrol show partition --oneliner`` prints (one line naming the problem)."""


@dataclass(frozen=True)
class PartitionLimits:
    """What of one partition can keep a job from starting (None: no limit)."""

    name: str
    state: str = "UP"  # UP, DOWN, DRAIN, INACTIVE
    max_nodes: int | None = None
    max_time: float | None = None  # seconds
    max_time_text: str = ""  # as Slurm printed it (for the reason shown)
    qos: str = ""  # the partition's QOS (its limits apply to every job of the partition)


def slurm_duration(text: str, what: str) -> float | None:
    """Seconds in a Slurm time limit (``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``,
    ``D-HH:MM:SS``); None for ``UNLIMITED``/``INFINITE``/``NONE``."""
    text = text.strip()
    if text.upper() in UNLIMITED:
        return None
    m = _DURATION.fullmatch(text)
    if m is None:
        raise PartitionOutputError(f"{what} {text[:40]!r} is not a Slurm time limit")
    d, a, b, c = m.groups()
    if d is not None:  # D-HH[:MM[:SS]]
        seconds = int(d) * 86400 + int(a) * 3600 + int(b or 0) * 60 + int(c or 0)
    elif c is not None:  # HH:MM:SS
        seconds = int(a) * 3600 + int(b) * 60 + int(c)
    elif b is not None:  # MM:SS
        seconds = int(a) * 60 + int(b)
    else:  # MM
        seconds = int(a) * 60
    return None if seconds > MAX_SECONDS else float(seconds)


def _fields(line: str) -> dict[str, str]:
    """``Key=Value`` words of one line (a value may hold ``=``: ``TRESBillingWeights=CPU=1.0``)."""
    out: dict[str, str] = {}
    for word in line.split():
        key, sep, value = word.partition("=")
        if sep and key not in out:
            out[key] = value
    return out


def parse_partitions(text: str) -> dict[str, PartitionLimits]:
    """``scontrol show partition --oneliner``: partition name -> its limits."""
    out: dict[str, PartitionLimits] = {}
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) > MAX_PARTITIONS:
        raise PartitionOutputError(f"scontrol show partition: more than {MAX_PARTITIONS} partitions")
    for i, line in enumerate(lines, start=1):
        if len(line) > MAX_LINE:
            raise PartitionOutputError(f"scontrol show partition line {i}: longer than {MAX_LINE} characters")
        f = _fields(line)
        name = f.get("PartitionName", "")
        if not _NAME.fullmatch(name):
            raise PartitionOutputError(f"scontrol show partition line {i}: PartitionName {name[:40]!r} is not a partition name")
        raw_nodes = f.get("MaxNodes", "UNLIMITED")
        if raw_nodes.upper() in UNLIMITED:
            max_nodes = None
        elif raw_nodes.isdigit():
            max_nodes = min(int(raw_nodes), MAX_NODES)
        else:
            raise PartitionOutputError(f"partition {name}: MaxNodes {raw_nodes[:40]!r} is not a whole number")
        raw_time = f.get("MaxTime", "UNLIMITED")
        max_time = slurm_duration(raw_time, f"partition {name}: MaxTime")
        qos = f.get("QoS", f.get("QOS", ""))
        if qos.upper() in UNLIMITED:
            qos = ""
        elif not _NAME.fullmatch(qos):
            raise PartitionOutputError(f"partition {name}: QoS {qos[:40]!r} is not a QOS name")
        state = f.get("State", "UP").upper()
        out[name] = PartitionLimits(name=name, state=state if state.isalpha() else "UP", max_nodes=max_nodes,
                                    max_time=max_time, max_time_text=raw_time if max_time is not None else "",
                                    qos=qos)
    return out


__all__ = ["PARTITION_ARGV", "PartitionLimits", "PartitionOutputError", "parse_partitions", "slurm_duration"]
