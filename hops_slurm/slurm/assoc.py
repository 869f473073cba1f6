"""The site's governance as Slurm's accounting keeps it: associations and QOS with their GPU and job limits.

Where it sits: read by the live backend (:class:`hops_slurm.engine.live_backend.SlurmBackend`) once a minute
at most, from slurmdbd through ``sacctmgr show assoc|qos --parsable2`` with a fixed ``format=`` (the one
listing that 22.05, 24.11 and 26.05 print alike, a row per association; ``scontrol show assoc_mgr``
prints a different text per release). Current usage is not read from slurmdbd: it is what the jobs of
the round's snapshot hold (Slurm counts running jobs' GPUs against ``GrpTRES`` the same way), so the
limits and the usage describe the same instant. :func:`limits_for` turns both into pure planner input
(:class:`planner.governance.Limits`) with Slurm's reason names, so a job a cap blocks is shown in
``hops-slurm queue`` with the reason Slurm itself would give. Without slurmdbd (``sacctmgr`` fails)
there are no limits to keep and nothing is read again for ten minutes.

Limits kept (docs/governance.md): an account's ``GrpTRES=gres/gpu=N`` and ``GrpJobs`` (over the jobs of
the account and its sub-accounts), a user association's ``GrpTRES``, ``MaxJobs`` and ``MaxTRES``
(per job); a QOS's ``GrpTRES``, ``GrpJobs``, ``MaxTRESPU``/``MaxJobsPU`` (per user),
``MaxTRESPA``/``MaxJobsPA`` (per account) and ``MaxTRES`` (per job). Untyped ``gres/gpu`` only.

Fair share: each user association's ``FairShare`` from ``sshare --parsable2 --all --long`` (read with
the rest; the site's own standing: its shares, PriorityDecayHalfLife, fair tree, and every job's usage
as slurmdbd counts it), handed to the planner as :attr:`planner.views.JobView.fair_share`.
"""

from __future__ import annotations

import logging
import re
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from hops_slurm.slurm.api import SlurmJob
from planner.governance import Cap, Limits

log = logging.getLogger(__name__)

ASSOC_ARGV = ["sacctmgr", "show", "assoc", "--parsable2",
              "format=Cluster,Account,User,Partition,ParentName,Share,GrpTRES,GrpJobs,MaxJobs,MaxTRES,QOS,DefaultQOS"]
SSHARE_ARGV = ["sshare", "--parsable2", "--all", "--long"]
QOS_ARGV = ["sacctmgr", "show", "qos", "--parsable2",
            "format=Name,Priority,GrpTRES,GrpJobs,MaxTRES,MaxTRESPU,MaxJobsPU,MaxTRESPA,MaxJobsPA"]

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
            max_jobs_per_account=_count(r.get("MaxJobsPA", ""), "MaxJobsPA"))
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
        q = gov.qos.get(j.qos)
        if q is not None:
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
    caps = tuple(Cap(reason, scope, frozenset(ids), int(limit), unit,
                     MappingProxyType({i: (held[i] if unit == "gpus" else 1) for i in ids if i in running}))
                 for (reason, scope, unit, limit), ids in sorted(groups.items()))
    return Limits(caps=caps, per_job=MappingProxyType(per_job))


Runner = Callable[[list[str]], str]


class GovernanceSource:
    """The cluster's :class:`Governance`, read with ``run`` (argv -> stdout; raises on failure) at most
    every ``ttl`` seconds; after a failed read (no slurmdbd) none until ``retry`` seconds have passed."""

    def __init__(self, run: Runner, *, ttl: float = 60.0, retry: float = 600.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.run, self.ttl, self.retry, self.clock = run, ttl, retry, clock
        self._got: Governance | None = None
        self._at: float | None = None
        self.error = ""

    def current(self) -> Governance | None:
        now = self.clock()
        wait = self.ttl if self._got is not None else self.retry
        if self._at is not None and now - self._at < wait:
            return self._got
        self._at = now
        try:
            assoc, qos = parse_assoc(self.run(ASSOC_ARGV)), parse_qos(self.run(QOS_ARGV))
            try:
                shares = parse_sshare(self.run(SSHARE_ARGV))
            except Exception as exc:  # noqa: BLE001 - limits without fair share
                log.info("governance: no fair share read (%s)", exc)
                shares = {}
            self._got = Governance(tuple(assoc), MappingProxyType(qos), MappingProxyType(shares))
            self.error = ""
        except Exception as exc:  # noqa: BLE001 - no accounting (or unreadable): no limits to keep
            if self.error != str(exc):
                log.info("governance: no associations read (%s); planning without the site's limits", exc)
            self._got, self.error = None, str(exc)
        return self._got


def subprocess_runner(env: Mapping[str, str] | None, timeout: float = 30.0) -> Runner:
    """A :data:`Runner` over ``sacctmgr`` on PATH (argv lists, never a shell)."""
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


__all__ = ["Association", "Qos", "Governance", "GovernanceError", "GovernanceSource", "parse_assoc", "parse_qos",
           "parse_sshare", "gpus_of_tres", "limits_for", "jobs_limits", "jobs_fair_share", "subprocess_runner",
           "ASSOC_ARGV", "QOS_ARGV", "SSHARE_ARGV"]
