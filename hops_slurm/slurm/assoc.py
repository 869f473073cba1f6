"""The site's accounting as ``sacctmgr`` and ``sshare`` print it: associations, QOS and fair share.

Where it sits: :class:`hops_slurm.slurm.gov_source.GovernanceSource` reads slurmdbd with ``sacctmgr show
assoc|qos --parsable2`` and a fixed ``format=`` (the one listing that 22.05, 24.11 and 26.05 print alike, a
row per association; ``scontrol show assoc_mgr`` prints a different text per release) and ``sshare
--parsable2 --all --long``; this module parses them, nothing here runs a command.
:mod:`hops_slurm.slurm.gov_limits` turns them into planner input.

Hostile or broken output (docs/governance.md, "Reading"): lines end at ``\\n`` only (a user name may hold
U+2028, which :meth:`str.splitlines` would split on); a row that does not read (a ``|`` in a name, a
``GrpJobs`` of ``²``, a TRES type with a space) is kept as an *unreadable* row naming the field, with
what identifies it read from the left (cluster, account, user), and every other row is read as usual: the
jobs of that association are held back (fail closed) while the site's other limits stay in force. A
number too long to be a limit (a 5,000-digit ``GrpJobs``) is :data:`MAX_LIMIT`. Every error is a
:class:`hops_slurm.errors.GovernanceError`.

Limits read: a GPU limit is untyped (``gres/gpu=N``) or per GPU type (``gres/gpu:a100=N``), in
``GrpTRES``, ``MaxTRES`` (per job), and a QOS's ``MaxTRESPU``, ``MaxTRESPA`` and ``MaxTRESPerNode``;
job counts in ``GrpJobs``, ``MaxJobs``, ``MaxJobsPU``, ``MaxJobsPA``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from hops_slurm.errors import GovernanceError

ASSOC_ARGV = ["sacctmgr", "show", "assoc", "--parsable2",
              "format=Cluster,Account,User,Partition,ParentName,Share,GrpTRES,GrpJobs,MaxJobs,MaxTRES,QOS,DefaultQOS"]
SSHARE_ARGV = ["sshare", "--parsable2", "--all", "--long"]
QOS_ARGV = ["sacctmgr", "show", "qos", "--parsable2",
            "format=Name,Priority,GrpTRES,GrpJobs,MaxTRES,MaxTRESPU,MaxJobsPU,MaxTRESPA,MaxJobsPA,MaxTRESPerNode"]

#: bounds on what is read (hostile or broken output must not grow without end)
MAX_ROWS = 500_000
MAX_OUTPUT = 256 * 1024 * 1024
MAX_LIMIT = 10_000_000
MAX_NAME = 256
_DIGITS = re.compile(r"[0-9]+")  # ASCII digits only ("²".isdigit() is True)
_GPU_TYPE = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
_DECIMAL = re.compile(r"[0-9]{1,20}(?:\.[0-9]{1,20})?(?:[eE][-+]?[0-9]{1,3})?")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

#: a GPU limit per type: (type, GPUs) pairs, the untyped ``gres/gpu`` under ""
GpuLimits = tuple[tuple[str, int], ...]


def lines_of(text: str, what: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of non-blank lines, split at ``\\n`` only (``\\r`` before it dropped)."""
    if len(text) > MAX_OUTPUT:
        raise GovernanceError(f"{what}: more than {MAX_OUTPUT} characters")
    for i, line in enumerate(text.split("\n"), start=1):
        line = line[:-1] if line.endswith("\r") else line
        if line.strip():
            yield i, line


def whole(text: str, what: str) -> int | None:
    """A limit in ASCII digits (None when empty); one too long to be a limit is :data:`MAX_LIMIT`."""
    text = (text or "").strip()
    if not text:
        return None
    if _DIGITS.fullmatch(text) is None:
        raise GovernanceError(f"{what}: {text[:40]!r} is not a whole number")
    return MAX_LIMIT if len(text) > 8 else min(int(text), MAX_LIMIT)


def gpu_limits(text: str, what: str) -> GpuLimits:
    """The GPU limits of a TRES list: ``cpu=4,gres/gpu=8,gres/gpu:a100=2`` -> (("", 8), ("a100", 2)).
    Other TRES are left out; GPU types are compared in lower case, as Slurm does."""
    out: dict[str, int] = {}
    for item in (text or "").split(","):
        name, sep, value = item.strip().partition("=")
        low = name.lower()
        if low == "gres/gpu":
            kind = ""
        elif low.startswith("gres/gpu:"):
            kind = low[len("gres/gpu:"):]
            if _GPU_TYPE.fullmatch(kind) is None:
                raise GovernanceError(f"{what}: GPU type {kind[:40]!r} is not a GPU type")
        else:
            continue
        n = whole(value, f"{what} {name[:40]}") if sep else None
        if n is None:
            raise GovernanceError(f"{what}: {item[:40]!r} has no count")
        out[kind] = n
    return tuple(sorted(out.items()))


def untyped(limits: GpuLimits) -> int | None:
    return next((n for kind, n in limits if kind == ""), None)


def typed(limits: GpuLimits) -> GpuLimits:
    return tuple((kind, n) for kind, n in limits if kind)


def gpus_of_tres(text: str) -> int | None:
    """The untyped GPU count of a TRES list (``cpu=4,gres/gpu=8`` -> 8); None when it sets none."""
    return untyped(gpu_limits(text, "TRES"))


def name(text: str, what: str) -> str:
    """An account, user, partition or QOS name as printed: bounded, no control characters."""
    if len(text) > MAX_NAME:
        raise GovernanceError(f"{what}: longer than {MAX_NAME} characters")
    if _CONTROL.search(text):
        raise GovernanceError(f"{what} {text[:40]!r} holds a control character")
    return text


@dataclass(frozen=True)
class Row:
    """One ``--parsable2`` line: its cells by column (None when the line does not split into the header's
    columns: ``left`` then has its cells read from the left, for what identifies the row)."""

    line: int
    cells: dict[str, str] | None
    left: dict[str, str]
    problem: str = ""


def rows(text: str, what: str) -> list[Row]:
    """The rows of a ``--parsable2`` listing; a line with too many or too few fields is a :class:`Row`
    with a problem (never an error for the whole listing)."""
    found = lines_of(text, what)
    first = next(found, None)
    if first is None:
        return []
    head = first[1].split("|")
    out: list[Row] = []
    for i, ln in found:
        if len(out) >= MAX_ROWS:
            raise GovernanceError(f"{what}: more than {MAX_ROWS} rows")
        cells = ln.split("|")
        left = dict(zip(head, cells))
        if len(cells) != len(head):
            out.append(Row(i, None, left, f"{what} line {i}: {len(cells)} fields, the header has {len(head)}"))
        else:
            out.append(Row(i, left, left))
    return out


def need(columns: tuple[str, ...], text: str, what: str) -> None:
    """A listing without one of ``columns`` cannot be read at all (a different ``format=``, an error message);
    nor can one without a header (``--parsable2`` always prints it: empty output is a failed read, never
    a site without associations or QOS)."""
    found = next(lines_of(text, what), None)
    if found is None:
        raise GovernanceError(f"{what}: no output (not even its header line)")
    names = found[1].split("|")
    for col in columns:
        if col not in names:
            raise GovernanceError(f"{what}: no {col} column")


@dataclass(frozen=True)
class Association:
    """One association row (``user == ""``: the account's own row). ``unreadable``: why the row did not
    read (its limits are unknown: its jobs are held back); its identity is then read from the left."""

    cluster: str
    account: str
    user: str = ""
    partition: str = ""
    parent: str = ""  # the parent account (account rows only)
    grp_gpus: int | None = None
    grp_jobs: int | None = None
    max_jobs: int | None = None  # per user association
    max_gpus_per_job: int | None = None
    qos: tuple[str, ...] = ()
    grp_gpus_typed: GpuLimits = ()
    max_gpus_per_job_typed: GpuLimits = ()
    unreadable: str = ""


@dataclass(frozen=True)
class Qos:
    name: str
    priority: int = 0
    grp_gpus: int | None = None
    grp_jobs: int | None = None
    max_gpus_per_job: int | None = None
    max_gpus_per_user: int | None = None
    max_jobs_per_user: int | None = None
    max_gpus_per_account: int | None = None
    max_jobs_per_account: int | None = None
    max_gpus_per_node: int | None = None
    grp_gpus_typed: GpuLimits = ()
    max_gpus_per_job_typed: GpuLimits = ()
    max_gpus_per_user_typed: GpuLimits = ()
    max_gpus_per_account_typed: GpuLimits = ()
    max_gpus_per_node_typed: GpuLimits = ()
    unreadable: str = ""


def _assoc(r: dict[str, str], at: str) -> Association:
    grp, top = gpu_limits(r.get("GrpTRES", ""), f"{at} GrpTRES"), gpu_limits(r.get("MaxTRES", ""), f"{at} MaxTRES")
    return Association(
        cluster=name(r["Cluster"], f"{at} Cluster"), account=name(r["Account"], f"{at} Account").lower(),
        user=name(r.get("User", ""), f"{at} User"), partition=name(r.get("Partition", ""), f"{at} Partition"),
        parent=name(r.get("ParentName", ""), f"{at} ParentName").lower(),
        grp_gpus=untyped(grp), grp_gpus_typed=typed(grp), grp_jobs=whole(r.get("GrpJobs", ""), f"{at} GrpJobs"),
        max_jobs=whole(r.get("MaxJobs", ""), f"{at} MaxJobs"), max_gpus_per_job=untyped(top),
        max_gpus_per_job_typed=typed(top),
        qos=tuple(name(q, f"{at} QOS").lower() for q in r.get("QOS", "").split(",") if q))


def parse_assoc(text: str) -> list[Association]:
    """``sacctmgr show assoc --parsable2`` with :data:`ASSOC_ARGV`'s format; a row that does not read is an
    :class:`Association` with ``unreadable`` set (the others read as usual)."""
    what = "sacctmgr show assoc"
    need(("Cluster", "Account"), text, what)
    out = []
    for row in rows(text, what):
        if row.cells is not None:
            try:
                out.append(_assoc(row.cells, f"{what} line {row.line}:"))
                continue
            except GovernanceError as exc:
                problem = str(exc)
        else:
            problem = row.problem
        r = row.left
        # its identity read from the left; any partition (a row for one partition of the user holds back all
        # of that user's jobs in the account: the stricter reading)
        out.append(Association(cluster=r.get("Cluster", "")[:MAX_NAME], account=r.get("Account", "")[:MAX_NAME].lower(),
                               user=r.get("User", "")[:MAX_NAME], parent=r.get("ParentName", "")[:MAX_NAME].lower(),
                               unreadable=problem))
    return out


def _qos(r: dict[str, str], at: str) -> Qos:
    def lim(col: str) -> GpuLimits:
        return gpu_limits(r.get(col, ""), f"{at} {col}")

    grp, job, user, acct, node = lim("GrpTRES"), lim("MaxTRES"), lim("MaxTRESPU"), lim("MaxTRESPA"), lim("MaxTRESPerNode")
    return Qos(
        name=name(r["Name"], f"{at} Name").lower(), priority=whole(r.get("Priority", ""), f"{at} Priority") or 0,
        grp_gpus=untyped(grp), grp_jobs=whole(r.get("GrpJobs", ""), f"{at} GrpJobs"),
        max_gpus_per_job=untyped(job), max_gpus_per_user=untyped(user),
        max_jobs_per_user=whole(r.get("MaxJobsPU", ""), f"{at} MaxJobsPU"),
        max_gpus_per_account=untyped(acct), max_jobs_per_account=whole(r.get("MaxJobsPA", ""), f"{at} MaxJobsPA"),
        max_gpus_per_node=untyped(node), grp_gpus_typed=typed(grp), max_gpus_per_job_typed=typed(job),
        max_gpus_per_user_typed=typed(user), max_gpus_per_account_typed=typed(acct), max_gpus_per_node_typed=typed(node))


def parse_qos(text: str) -> dict[str, Qos]:
    """``sacctmgr show qos --parsable2`` with :data:`QOS_ARGV`'s format: name -> QOS (a row that does not
    read is a :class:`Qos` with ``unreadable`` set, named by its first cell)."""
    what = "sacctmgr show qos"
    need(("Name",), text, what)
    out: dict[str, Qos] = {}
    for row in rows(text, what):
        if row.cells is not None:
            try:
                q = _qos(row.cells, f"{what} line {row.line}:")
                out[q.name] = q
                continue
            except GovernanceError as exc:
                problem = str(exc)
        else:
            problem = row.problem
        key = row.left.get("Name", "")[:MAX_NAME].lower()
        out[key] = Qos(name=key, unreadable=problem)
    return out


def parse_sshare(text: str, problems: list[str] | None = None) -> dict[tuple[str, str], float]:
    """``sshare --parsable2 --all --long``: (account, user) -> Slurm's FairShare factor of each user
    association (account rows left out; the account is printed indented). A row whose factor is not a
    plain decimal in [0, 1] is left out and named in ``problems`` (fair share orders jobs; it is no limit)."""
    what = "sshare"
    need(("User", "FairShare"), text, what)  # no header: a failed read (the last good fair share stays)
    out: dict[tuple[str, str], float] = {}
    for row in rows(text, what):
        r = row.cells
        if r is None:
            if problems is not None:
                problems.append(row.problem)
            continue
        user, raw = r.get("User", ""), r.get("FairShare", "").strip()
        if not user or not raw:
            continue
        value = float(raw) if _DECIMAL.fullmatch(raw) else -1.0
        if not 0.0 <= value <= 1.0:
            if problems is not None:
                problems.append(f"{what} line {row.line}: FairShare {raw[:40]!r} of user {user[:40]!r} "
                                "is not a number in [0, 1]")
            continue
        out[(r.get("Account", "").strip().lower(), user)] = value
    return out


__all__ = ["Association", "Qos", "GovernanceError", "GpuLimits", "parse_assoc", "parse_qos", "parse_sshare",
           "gpu_limits", "gpus_of_tres", "whole", "lines_of", "name", "rows", "ASSOC_ARGV", "QOS_ARGV", "SSHARE_ARGV",
           "MAX_LIMIT"]
