"""The partitions' limits as slurmctld keeps them: MaxNodes, MinNodes, MaxTime, State, who may use them,
and the partition's QOS.

Where it sits: read by :class:`hops_slurm.slurm.gov_source.GovernanceSource` with the associations and QOS
(once a minute at most), from slurmctld through ``scontrol show partition --oneliner``: the one form
22.05, 24.11 and 26.05 print alike (22.05's ``scontrol`` has no ``--json``; the recordings of all three
are in ``tests/data/slurm-output/<release>/scontrol-show-partition.txt``). Partitions need no slurmdbd:
a cluster without accounting still has them. :func:`hops_slurm.slurm.gov_limits.limits_for` turns them into
planner input with Slurm's own reason names (``PartitionNodeLimit``, ``PartitionTimeLimit``,
``PartitionDown``, ``PartitionInactive``, ``PartitionConfig`` for ``AllowAccounts``/``DenyAccounts``/
``AllowQos``/``DenyQos``); a partition's ``QOS=`` brings that QOS's GPU limits to every job of the
partition, as Slurm applies them. One line that does not read (a ``MaxNodes`` of ``many``) is a partition
with ``unreadable`` set, its jobs held back, the other partitions read as usual. Pure parsing; nothing
here runs a command.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hops_slurm.errors import GovernanceError
from hops_slurm.slurm.assoc import lines_of

PARTITION_ARGV = ["scontrol", "show", "partition", "--oneliner"]

#: bounds on what is read (hostile or broken output must not grow without end)
MAX_PARTITIONS = 10_000
MAX_LINE = 4 * 1024 * 1024  # an AllowAccounts of thousands of accounts is a long line, and legitimate
MAX_NODES = 10_000_000
MAX_SECONDS = 10.0 * 365 * 86400  # a limit beyond ten years is none
#: a partition or QOS name as the job listing carries it: printable, no blank, no list or key separator
_NAME = re.compile(r"[!-~]{1,256}")
_SEPARATORS = re.compile(r"[,=|]")
_DURATION = re.compile(r"(?:([0-9]{1,6})-)?([0-9]{1,6})(?::([0-9]{1,6}))?(?::([0-9]{1,6}))?")  # ASCII: \d takes "١"
NO_PARTITIONS = "No partitions in the system"  # what scontrol prints for a cluster without any
UNLIMITED = ("UNLIMITED", "INFINITE", "NONE", "N/A", "")


class PartitionOutputError(GovernanceError):
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
    min_nodes: int | None = None  # None: 1 or less
    allow_accounts: frozenset[str] | None = None  # None: ALL
    deny_accounts: frozenset[str] = frozenset()
    allow_qos: frozenset[str] | None = None  # None: ALL
    deny_qos: frozenset[str] = frozenset()
    unreadable: str = ""  # why its line did not read (its jobs are held back)


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


def is_name(text: str) -> bool:
    return _NAME.fullmatch(text) is not None and _SEPARATORS.search(text) is None


def _nodes(raw: str, what: str) -> int | None:
    if raw.upper() in UNLIMITED:
        return None
    if not raw.isascii() or not raw.isdigit():
        raise PartitionOutputError(f"{what} {raw[:40]!r} is not a whole number")
    return MAX_NODES if len(raw) > 8 else min(int(raw), MAX_NODES)


def _names(raw: str | None, what: str) -> frozenset[str] | None:
    """A comma list of accounts or QOS (lower case, as Slurm keeps them); None for ``ALL`` or absent."""
    if raw is None or raw.upper() == "ALL":
        return None
    out = set()
    for item in raw.split(","):
        if not item or item.upper() in UNLIMITED:
            continue
        if not is_name(item):
            raise PartitionOutputError(f"{what}: {item[:40]!r} is not a name")
        out.add(item.lower())
    return frozenset(out)


def _partition(f: dict[str, str], name: str) -> PartitionLimits:
    at = f"partition {name}:"
    max_nodes = _nodes(f.get("MaxNodes", "UNLIMITED"), f"{at} MaxNodes")
    min_nodes = _nodes(f.get("MinNodes", "0"), f"{at} MinNodes")
    raw_time = f.get("MaxTime", "UNLIMITED")
    max_time = slurm_duration(raw_time, f"{at} MaxTime")
    qos = f.get("QoS", f.get("QOS", ""))
    if qos.upper() in UNLIMITED:
        qos = ""
    elif not is_name(qos):
        raise PartitionOutputError(f"{at} QoS {qos[:40]!r} is not a QOS name")
    state = f.get("State", "UP").upper()
    return PartitionLimits(name=name, state=state if state.isalpha() else "UP", max_nodes=max_nodes,
                           max_time=max_time, max_time_text=raw_time if max_time is not None else "",
                           qos=qos.lower(), min_nodes=min_nodes if min_nodes is not None and min_nodes > 1 else None,
                           allow_accounts=_names(f.get("AllowAccounts"), f"{at} AllowAccounts"),
                           deny_accounts=_names(f.get("DenyAccounts"), f"{at} DenyAccounts") or frozenset(),
                           allow_qos=_names(f.get("AllowQos"), f"{at} AllowQos"),
                           deny_qos=_names(f.get("DenyQos"), f"{at} DenyQos") or frozenset())


def parse_partitions(text: str, problems: list[str] | None = None) -> dict[str, PartitionLimits]:
    """``scontrol show partition --oneliner``: partition name -> its limits. A line that does not read is
    a partition with ``unreadable`` set (named in ``problems``); one with no name to hold back is only
    named in ``problems``. An output that names no partition at all (empty, or an error message printed
    with exit status 0) is a :class:`PartitionOutputError`: a failed read, never a site without limits."""
    out: dict[str, PartitionLimits] = {}
    what = "scontrol show partition"
    for count, (i, line) in enumerate(lines_of(text, what), start=1):
        if count > MAX_PARTITIONS:
            raise PartitionOutputError(f"{what}: more than {MAX_PARTITIONS} partitions")
        f = _fields(line[:MAX_LINE])
        name = f.get("PartitionName", "")
        try:
            if not is_name(name):
                raise PartitionOutputError(f"{what} line {i}: PartitionName {name[:40]!r} is not a partition name")
            if len(line) > MAX_LINE:
                raise PartitionOutputError(f"{what} line {i}: longer than {MAX_LINE} characters")
            out[name] = _partition(f, name)
        except GovernanceError as exc:
            if problems is not None:
                problems.append(str(exc))
            if name and len(name) <= 256:
                out[name] = PartitionLimits(name=name, unreadable=str(exc))
    if not out and not text.lstrip().startswith(NO_PARTITIONS):
        # nothing, or only lines naming no partition (an error message): not "a site without partitions"
        raise PartitionOutputError(f"{what}: no partition in the output ({text.strip()[:80]!r})")
    return out


__all__ = ["is_name", "PARTITION_ARGV", "PartitionLimits", "PartitionOutputError", "parse_partitions", "slurm_duration"]
