"""The site's governance as Slurm's accounting keeps it: associations and QOS with their GPU and job limits.

Where it sits: read by the live backend (:class:`hops_slurm.engine.live_backend.SlurmBackend`) once a minute
at most, from slurmdbd through ``sacctmgr show assoc|qos --parsable2`` with a fixed ``format=`` (the one
listing that 22.05, 24.11 and 26.05 print alike, a row per association; ``scontrol show assoc_mgr``
prints a different text per release). Current usage is not read from slurmdbd: it is what the jobs of
the round's snapshot hold (Slurm counts running jobs' GPUs against ``GrpTRES`` the same way), so the
limits and the usage describe the same instant. :func:`limits_for` turns both into pure planner input
(:class:`planner.governance.Limits`) with Slurm's reason names, so a job a cap blocks is shown in
``hops-slurm queue`` with the reason Slurm itself would give. Without slurmdbd (``sacctmgr`` fails)
there are no association or QOS limits to keep and ``sacctmgr`` is not asked again for ten minutes; the
partitions' limits (:mod:`hops_slurm.slurm.partitions`, from slurmctld) are kept either way.

Limits kept (docs/governance.md): an account's ``GrpTRES=gres/gpu=N`` and ``GrpJobs`` (over the jobs of
the account and its sub-accounts), a user association's ``GrpTRES``, ``MaxJobs`` and ``MaxTRES``
(per job); a QOS's ``GrpTRES``, ``GrpJobs``, ``MaxTRESPU``/``MaxJobsPU`` (per user),
``MaxTRESPA``/``MaxJobsPA`` (per account), ``MaxTRES`` (per job) and ``MaxTRESPerNode``; a partition's
``MaxNodes``, ``MaxTime`` and ``State``, and its QOS's limits for every job of the partition. Untyped
``gres/gpu`` only.

Fair share: each user association's ``FairShare`` from ``sshare --parsable2 --all --long`` (read with
the rest; the site's own standing: its shares, PriorityDecayHalfLife, fair tree, and every job's usage
as slurmdbd counts it), handed to the planner as :attr:`planner.views.JobView.fair_share`.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from hops_slurm.slurm.api import SlurmJob
from hops_slurm.slurm.partitions import PARTITION_ARGV, PartitionLimits, parse_partitions
from planner.governance import Cap, Limits, Shape

log = logging.getLogger(__name__)

ASSOC_ARGV = ["sacctmgr", "show", "assoc", "--parsable2",
              "format=Cluster,Account,User,Partition,ParentName,Share,GrpTRES,GrpJobs,MaxJobs,MaxTRES,QOS,DefaultQOS"]
SSHARE_ARGV = ["sshare", "--parsable2", "--all", "--long"]
QOS_ARGV = ["sacctmgr", "show", "qos", "--parsable2",
            "format=Name,Priority,GrpTRES,GrpJobs,MaxTRES,MaxTRESPU,MaxJobsPU,MaxTRESPA,MaxJobsPA,MaxTRESPerNode"]

#: bounds on what is read (hostile or broken output must not grow without end)
MAX_ROWS = 100_000
MAX_LIMIT = 10_000_000
_GPU = re.compile(r"(?:^|,)gres/gpu=(\d+)(?:,|$)")


class GovernanceError(ValueError):
    """Output that is not what ``sacctmgr --parsable2`` prints (one line naming the problem)."""


def gpus_of_tres(text: str) -> int | None:
    """The untyped GPU count of a TRES list (``cpu=4,gres/gpu=8`` -> 8); None when it sets none."""
    m = _GPU.search(text or "")
    if m is None:
        return None
    return min(int(m.group(1)), MAX_LIMIT)


def _count(text: str, what: str) -> int | None:
    text = (text or "").strip()
    if not text:
        return None
    if not text.isdigit():
        raise GovernanceError(f"{what}: {text[:40]!r} is not a whole number")
    return min(int(text), MAX_LIMIT)


def _rows(text: str, what: str) -> list[dict[str, str]]:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return []
    head = lines[0].split("|")
    if len(lines) > MAX_ROWS + 1:
        raise GovernanceError(f"{what}: more than {MAX_ROWS} rows")
    out = []
    for i, ln in enumerate(lines[1:], start=2):
        cells = ln.split("|")
        if len(cells) != len(head):
            raise GovernanceError(f"{what} line {i}: {len(cells)} fields, the header has {len(head)}")
        out.append(dict(zip(head, cells)))
    return out


@dataclass(frozen=True)
class Association:
    """One association row (``user == ""``: the account's own row)."""

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


def parse_assoc(text: str) -> list[Association]:
    """``sacctmgr show assoc --parsable2`` with :data:`ASSOC_ARGV`'s format."""
    out = []
    for r in _rows(text, "sacctmgr show assoc"):
        try:
            out.append(Association(
                cluster=r["Cluster"], account=r["Account"], user=r.get("User", ""), partition=r.get("Partition", ""),
                parent=r.get("ParentName", ""), grp_gpus=gpus_of_tres(r.get("GrpTRES", "")),
                grp_jobs=_count(r.get("GrpJobs", ""), "GrpJobs"), max_jobs=_count(r.get("MaxJobs", ""), "MaxJobs"),
                max_gpus_per_job=gpus_of_tres(r.get("MaxTRES", "")),
                qos=tuple(q for q in r.get("QOS", "").split(",") if q)))
        except KeyError as exc:
            raise GovernanceError(f"sacctmgr show assoc: no {exc.args[0]} column") from None
    return out


def parse_qos(text: str) -> dict[str, Qos]:
    """``sacctmgr show qos --parsable2`` with :data:`QOS_ARGV`'s format: name -> QOS."""
    out: dict[str, Qos] = {}
    for r in _rows(text, "sacctmgr show qos"):
        if "Name" not in r:
            raise GovernanceError("sacctmgr show qos: no Name column")
        out[r["Name"]] = Qos(
            name=r["Name"], priority=_count(r.get("Priority", ""), "Priority") or 0,
            grp_gpus=gpus_of_tres(r.get("GrpTRES", "")), grp_jobs=_count(r.get("GrpJobs", ""), "GrpJobs"),
            max_gpus_per_job=gpus_of_tres(r.get("MaxTRES", "")),
            max_gpus_per_user=gpus_of_tres(r.get("MaxTRESPU", "")),
            max_jobs_per_user=_count(r.get("MaxJobsPU", ""), "MaxJobsPU"),
            max_gpus_per_account=gpus_of_tres(r.get("MaxTRESPA", "")),
            max_jobs_per_account=_count(r.get("MaxJobsPA", ""), "MaxJobsPA"),
            max_gpus_per_node=gpus_of_tres(r.get("MaxTRESPerNode", "")))
    return out


def parse_sshare(text: str) -> dict[tuple[str, str], float]:
    """``sshare --parsable2 --all --long``: (account, user) -> Slurm's FairShare factor of each user
    association (account rows and unparsable factors left out; the account is printed indented)."""
    out: dict[tuple[str, str], float] = {}
    for r in _rows(text, "sshare"):
        user, raw = r.get("User", ""), r.get("FairShare", "")
        if not user or not raw:
            continue
        try:
            value = float(raw)
        except ValueError:
            raise GovernanceError(f"sshare: FairShare {raw[:40]!r} of user {user[:40]!r} is not a number") from None
        if 0.0 <= value <= 1.0:
            out[(r.get("Account", "").strip(), user)] = value
    return out


@dataclass(frozen=True)
class Governance:
    """Every association and QOS of the cluster (one read), and each user association's fair-share
    factor (empty without priority/multifactor or when ``sshare`` fails)."""

    associations: tuple[Association, ...] = ()
    qos: Mapping[str, Qos] = field(default_factory=lambda: MappingProxyType({}))
    fairshare: Mapping[tuple[str, str], float] = field(default_factory=lambda: MappingProxyType({}))
    partitions: Mapping[str, PartitionLimits] = field(default_factory=lambda: MappingProxyType({}))

    def account_chain(self, account: str) -> list[Association]:
        """The account's own row and its ancestors' (nearest first), each once."""
        rows = {a.account: a for a in self.associations if not a.user}
        out: list[Association] = []
        name = account
        while name in rows and all(a.account != name for a in out):
            out.append(rows[name])
            name = rows[name].parent
        return out

    def user_row(self, account: str, user: str, partition: str) -> Association | None:
        rows = [a for a in self.associations if a.account == account and a.user == user and a.user]
        exact = [a for a in rows if a.partition == partition]
        return (exact or [a for a in rows if not a.partition] or [None])[0]


def _gpus(job: SlurmJob) -> int:
    return sum(job.gpu_config().values())


def limits_for(gov: Governance, jobs: Sequence[SlurmJob],
               promised: Mapping[str, Mapping[str, int]] | None = None) -> Limits:
    """The caps over the active jobs of ``jobs`` (the round's listing, non-Hops jobs included: their GPUs
    count) that the associations and QOS of ``gov`` set, with Slurm's reason names. ``promised``: pending
    jobs already released onto GPUs (job id -> config), held like running ones."""
    active = [j for j in jobs if j.pending or j.active]
    promised = promised or {}
    held = {j.job_id: _gpus(j) if j.active else sum(promised[j.job_id].values())
            for j in active if j.active or j.job_id in promised}
    running = set(held)
    groups: dict[tuple[str, str, str, str], set[str]] = {}  # (reason, scope, unit, limit) -> job ids
    per_job: dict[str, tuple[int, str]] = {}
    blocked: dict[str, str] = {}
    shapes: dict[str, Shape] = {}

    def shape_of(job_id: str, *, nodes: tuple[int, str] | None = None, per_node: tuple[int, str] | None = None) -> None:
        s = shapes.get(job_id, Shape())
        if nodes is not None and (s.max_nodes is None or nodes[0] < s.max_nodes):
            s = dataclasses.replace(s, max_nodes=nodes[0], nodes_label=nodes[1])
        if per_node is not None and (s.max_per_node is None or per_node[0] < s.max_per_node):
            s = dataclasses.replace(s, max_per_node=per_node[0], per_node_label=per_node[1])
        shapes[job_id] = s

    def add(reason: str, scope: str, unit: str, limit: int, job_id: str) -> None:
        groups.setdefault((reason, scope, unit, str(limit)), set()).add(job_id)

    def job_max(job_id: str, limit: int, label: str) -> None:
        if job_id not in per_job or limit < per_job[job_id][0]:
            per_job[job_id] = (limit, label)

    for j in active:
        for a in gov.account_chain(j.account):
            if a.grp_gpus is not None:
                add("AssocGrpGRES", f"account={a.account} gres/gpu={a.grp_gpus}", "gpus", a.grp_gpus, j.job_id)
            if a.grp_jobs is not None:
                add("AssocGrpJobsLimit", f"account={a.account} GrpJobs={a.grp_jobs}", "jobs", a.grp_jobs, j.job_id)
        u = gov.user_row(j.account, j.user, j.partition)
        if u is not None:
            if u.grp_gpus is not None:
                add("AssocGrpGRES", f"account={u.account} user={u.user} gres/gpu={u.grp_gpus}", "gpus", u.grp_gpus, j.job_id)
            if u.max_jobs is not None:
                add("AssocMaxJobsLimit", f"account={u.account} user={u.user} MaxJobs={u.max_jobs}", "jobs",
                    u.max_jobs, j.job_id)
            if u.max_gpus_per_job is not None:
                job_max(j.job_id, u.max_gpus_per_job, f"AssocMaxGRESPerJob: account={u.account} user={u.user} "
                                                      f"gres/gpu={u.max_gpus_per_job} per job")
        own = gov.qos.get(j.qos)
        part = gov.partitions.get(j.partition)
        # the partition's QOS applies to every job of the partition, beside the job's own (once when the same)
        part_qos = gov.qos.get(part.qos) if part is not None and part.qos and part.qos != j.qos else None
        for q in (own, part_qos):
            if q is None:
                continue
            if q.grp_gpus is not None:
                add("QOSGrpGRES", f"qos={q.name} gres/gpu={q.grp_gpus}", "gpus", q.grp_gpus, j.job_id)
            if q.grp_jobs is not None:
                add("QOSGrpJobsLimit", f"qos={q.name} GrpJobs={q.grp_jobs}", "jobs", q.grp_jobs, j.job_id)
            if q.max_gpus_per_user is not None:
                add("QOSMaxGRESPerUser", f"qos={q.name} user={j.user} gres/gpu={q.max_gpus_per_user}", "gpus",
                    q.max_gpus_per_user, j.job_id)
            if q.max_jobs_per_user is not None:
                add("QOSMaxJobsPerUserLimit", f"qos={q.name} user={j.user} MaxJobsPU={q.max_jobs_per_user}", "jobs",
                    q.max_jobs_per_user, j.job_id)
            if q.max_gpus_per_account is not None:
                add("QOSMaxGRESPerAccount", f"qos={q.name} account={j.account} gres/gpu={q.max_gpus_per_account}",
                    "gpus", q.max_gpus_per_account, j.job_id)
            if q.max_jobs_per_account is not None:
                add("QOSMaxJobsPerAccountLimit", f"qos={q.name} account={j.account} MaxJobsPA={q.max_jobs_per_account}",
                    "jobs", q.max_jobs_per_account, j.job_id)
            if q.max_gpus_per_job is not None:
                job_max(j.job_id, q.max_gpus_per_job, f"QOSMaxGRESPerJob: qos={q.name} gres/gpu={q.max_gpus_per_job} per job")
            if q.max_gpus_per_node is not None:
                shape_of(j.job_id, per_node=(q.max_gpus_per_node,
                                             f"QOSMaxGRESPerNode: qos={q.name} gres/gpu={q.max_gpus_per_node} per node"))
        if part is not None:
            why = partition_refusal(part, j) if j.pending else ""
            if why:
                blocked[j.job_id] = why
            if part.max_nodes is not None:
                shape_of(j.job_id, nodes=(part.max_nodes, f"PartitionNodeLimit: partition={part.name} MaxNodes={part.max_nodes}"))
    caps = tuple(Cap(reason, scope, frozenset(ids), int(limit), unit,
                     MappingProxyType({i: (held[i] if unit == "gpus" else 1) for i in ids if i in running}))
                 for (reason, scope, unit, limit), ids in sorted(groups.items()))
    return Limits(caps=caps, per_job=MappingProxyType(per_job), blocked=MappingProxyType(blocked),
                  shapes=MappingProxyType(shapes))


def partition_refusal(part: PartitionLimits, job: SlurmJob) -> str:
    """Why Slurm will not start a pending job of ``part`` whatever its placement ("" when it may): the
    partition is down or inactive, or the job's time limit is over the partition's ``MaxTime``."""
    if part.state == "DOWN":
        return f"PartitionDown: partition={part.name}"
    if part.state == "INACTIVE":
        return f"PartitionInactive: partition={part.name}"
    if part.max_time is not None and job.time_limit > part.max_time:
        return f"PartitionTimeLimit: partition={part.name} MaxTime={part.max_time_text}"
    return ""


Runner = Callable[[list[str]], str]


class GovernanceSource:
    """The cluster's :class:`Governance`, read with ``run`` (argv -> stdout; raises on failure) at most
    every ``ttl`` seconds; after a failed accounting read (no slurmdbd) ``sacctmgr`` is not asked again
    until ``retry`` seconds have passed. Partitions come from slurmctld (``scontrol``) and are read every
    ``ttl`` seconds whether or not there is accounting."""

    def __init__(self, run: Runner, *, ttl: float = 60.0, retry: float = 600.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.run, self.ttl, self.retry, self.clock = run, ttl, retry, clock
        self._got: Governance | None = None
        self._accounting: Governance | None = None  # associations, QOS, fair share (None: no slurmdbd)
        self._partitions: Mapping[str, PartitionLimits] = MappingProxyType({})
        self._at: float | None = None  # the latest read of anything
        self._acct_at: float | None = None
        self.error = ""

    def current(self) -> Governance | None:
        now = self.clock()
        if self._at is not None and now - self._at < self.ttl:
            return self._got
        self._at = now
        try:
            self._partitions = MappingProxyType(parse_partitions(self.run(PARTITION_ARGV)))
        except Exception as exc:  # noqa: BLE001 - no partition limits (kept as last read)
            log.info("governance: partitions not read (%s)", exc)
        wait = self.ttl if self._accounting is not None else self.retry
        if self._acct_at is None or now - self._acct_at >= wait:
            self._acct_at = now
            self._accounting = self._read_accounting()
        if self._accounting is None and not self._partitions:
            self._got = None
        else:
            self._got = dataclasses.replace(self._accounting or Governance(), partitions=self._partitions)
        return self._got

    def _read_accounting(self) -> Governance | None:
        try:
            assoc, qos = parse_assoc(self.run(ASSOC_ARGV)), parse_qos(self.run(QOS_ARGV))
            try:
                shares = parse_sshare(self.run(SSHARE_ARGV))
            except Exception as exc:  # noqa: BLE001 - limits without fair share
                log.info("governance: no fair share read (%s)", exc)
                shares = {}
            self.error = ""
            return Governance(tuple(assoc), MappingProxyType(qos), MappingProxyType(shares))
        except Exception as exc:  # noqa: BLE001 - no accounting (or unreadable): no association limits to keep
            if self.error != str(exc):
                log.info("governance: no associations read (%s); planning without the site's accounting limits", exc)
            self.error = str(exc)
            return None


def subprocess_runner(env: Mapping[str, str] | None, timeout: float = 30.0) -> Runner:
    """A :data:`Runner` over ``sacctmgr``, ``sshare`` and ``scontrol`` on PATH (argv lists, never a shell)."""
    def run(argv: list[str]) -> str:
        proc = subprocess.run(argv, env=dict(env) if env is not None else None, capture_output=True, text=True,
                              encoding="utf-8", errors="replace", timeout=timeout, check=False)
        if proc.returncode != 0:
            raise GovernanceError(f"{' '.join(argv[:3])}: {(proc.stderr or proc.stdout).strip()[:200]}")
        return proc.stdout
    return run


def jobs_fair_share(source: GovernanceSource | None, jobs: Iterable[SlurmJob]) -> dict[str, float]:
    """Job id -> its association's FairShare (jobs whose association sshare does not list: none)."""
    gov = source.current() if source is not None else None
    if gov is None or not gov.fairshare:
        return {}
    return {j.job_id: gov.fairshare[(j.account, j.user)] for j in jobs if (j.account, j.user) in gov.fairshare}


def jobs_limits(source: GovernanceSource | None, jobs: Iterable[SlurmJob],
                promised: Mapping[str, Mapping[str, int]] | None = None) -> Limits | None:
    """The limits of this listing, or None when the cluster keeps no accounting."""
    gov = source.current() if source is not None else None
    return limits_for(gov, list(jobs), promised) if gov is not None else None


__all__ = ["partition_refusal", "Association", "Qos", "Governance", "GovernanceError", "GovernanceSource", "parse_assoc", "parse_qos",
           "parse_sshare", "gpus_of_tres", "limits_for", "jobs_limits", "jobs_fair_share", "subprocess_runner",
           "ASSOC_ARGV", "QOS_ARGV", "SSHARE_ARGV"]
