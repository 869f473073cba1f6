"""The site's limits over one job listing: associations, QOS and partitions turned into planner input.

Where it sits: between one reading of the site's governance (:class:`Governance`, made by
:class:`hops_slurm.slurm.gov_source.GovernanceSource` from :mod:`hops_slurm.slurm.assoc` and
:mod:`hops_slurm.slurm.partitions`) and the planner: :func:`limits_for` gives the
:class:`planner.governance.Limits` of a planning, with Slurm's own reason names, so a job a limit holds
back is shown in ``hops-slurm queue`` with the reason Slurm itself would give. Current usage is not read
from slurmdbd: it is what the jobs of the round's snapshot hold (Slurm counts running jobs' GPUs against
``GrpTRES`` the same way), so the limits and the usage describe the same instant.

Cost (docs/governance.md, "Scale"): a reading is indexed once (user associations by (account, user,
partition); each account's ancestors that set a limit, walked once per account with a cycle check linear
in the depth), so the limits of a planning cost the listed jobs times their own limits, never jobs times
associations.

Fail closed (docs/governance.md, "When a read fails"): a reading that was never made (``unread``) holds
back every pending job; an unreadable association, QOS or partition row holds back the pending jobs it
would govern, named; running jobs are Slurm's and are never cut.

Per GPU type: a ``gres/gpu:<type>=N`` limit counts only the GPUs on that type's nodes (``node_types``),
as a :class:`planner.governance.Cap` with ``nodes`` or a :class:`planner.governance.Bound` of the job.
A pending job listing several partitions is held to every one that may start it (those that refuse it
outright are left out; when all do, it is blocked), which is never less strict than the one Slurm picks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType

from hops_slurm.slurm.api import SlurmJob
from hops_slurm.slurm.assoc import Association, GpuLimits, Qos
from hops_slurm.slurm.partitions import PartitionLimits
from planner.governance import Bound, Cap, Limits, Shape

UNREAD = "HopsLimitsUnread"  # the reason of a job held back because the site's limits are not known yet


@dataclass(frozen=True)
class Governance:
    """One reading of the cluster's associations, QOS and partitions, and each user association's
    fair-share factor (empty without priority/multifactor or when ``sshare`` fails). ``unread``: why no
    reading of what Slurm enforces has been made yet ("" once one has): every pending job is held back."""

    associations: tuple[Association, ...] = ()
    qos: Mapping[str, Qos] = field(default_factory=lambda: MappingProxyType({}))
    fairshare: Mapping[tuple[str, str], float] = field(default_factory=lambda: MappingProxyType({}))
    partitions: Mapping[str, PartitionLimits] = field(default_factory=lambda: MappingProxyType({}))
    unread: str = ""

    @cached_property
    def _accounts(self) -> dict[str, Association]:
        """Account -> its row (one that did not read wins: the account's limits are then unknown)."""
        rows: dict[str, Association] = {}
        for a in self.associations:
            if a.user:
                continue
            now = rows.get(a.account)
            if now is None or (not now.unreadable and (a.unreadable or not a.partition)):
                rows[a.account] = a
        return rows

    @cached_property
    def _users(self) -> dict[tuple[str, str, str | None], Association]:
        """(account, user, partition) -> its row; (account, user, None) -> a row of theirs that did not read."""
        out: dict[tuple[str, str, str | None], Association] = {}
        for a in reversed(self.associations):
            if a.user:
                out[(a.account, a.user, None if a.unreadable else a.partition)] = a
        return out

    @cached_property
    def _chains(self) -> dict[str, tuple[Association, ...]]:
        """Account -> its own row and its ancestors' (nearest first, each once), those that set a limit or
        did not read. Each account is walked once: a walk stops at an account already done, and a cycle
        (a parent that is its own descendant) ends the chain where it closes."""
        rows = self._accounts

        def limited(account: str) -> bool:
            row = rows[account]
            return bool(row.unreadable or row.grp_gpus is not None or row.grp_jobs is not None or row.grp_gpus_typed)

        done: dict[str, tuple[Association, ...]] = {}
        for start in rows:
            path: list[str] = []
            at: dict[str, int] = {}  # account -> its place on the path
            name = start
            while name in rows and name not in done and name not in at:
                at[name] = len(path)
                path.append(name)
                name = rows[name].parent
            tail = done.get(name, ())
            if name in at:  # a cycle: every account on it is under every other, so all their limits apply
                loop = path[at[name]:]
                tail = tuple(rows[a] for a in loop if limited(a))
                for account in loop:
                    done[account] = tail
                path = path[:at[name]]
            for account in reversed(path):
                tail = ((rows[account],) + tail) if limited(account) else tail
                done[account] = tail
        return done

    def account_chain(self, account: str) -> list[Association]:
        """The account's own row and its ancestors' that set a limit (nearest first), each once."""
        return list(self._chains.get(account, ()))

    @cached_property
    def doubtful(self) -> tuple[str, frozenset[str], str]:
        """What a row that did not read may hide: (the first unreadable association row's problem, the accounts
        with an unreadable user row, the first unreadable QOS row's problem); "" and empty when none. A row
        with a ``|`` in a name is read from the left, so the account or user it names may not be the real one:
        a job whose account, user or QOS the reading does not show may be that row's."""
        bad_account = next((a.unreadable for a in self.associations if a.unreadable), "")
        bad_users = frozenset(a.account for a in self.associations if a.unreadable and a.user)
        bad_qos = next((q.unreadable for q in self.qos.values() if q.unreadable), "")
        return bad_account, bad_users, bad_qos

    def user_row(self, account: str, user: str, partition: str) -> Association | None:
        users = self._users
        return users.get((account, user, None)) or users.get((account, user, partition)) or users.get((account, user, ""))


NO_SHAPE = Shape()


def _step(s: Shape, step: tuple[str, object]) -> Shape:
    key, value = step
    if key == "bound":
        assert isinstance(value, Bound)
        return dataclasses.replace(s, bounds=s.bounds + (value,))
    assert isinstance(value, tuple)
    limit, text = value
    attr, label, tighter = {"nodes": ("max_nodes", "nodes_label", min), "per_node": ("max_per_node", "per_node_label", min),
                            "min_nodes": ("min_nodes", "min_label", max)}[key]
    old = getattr(s, attr)
    return dataclasses.replace(s, **{attr: limit, label: text}) if old is None or tighter(old, limit) != old else s


def _held(job: SlurmJob, promised: Mapping[str, Mapping[str, int]]) -> dict[str, int] | None:
    if job.active:
        return job.gpu_config()
    return dict(promised[job.job_id]) if job.job_id in promised else None


def partition_refusal(part: PartitionLimits, job: SlurmJob) -> str:
    """Why Slurm will not start a pending job in ``part`` whatever its placement ("" when it may): the
    partition is down or inactive, did not read, the job's time limit is over its ``MaxTime``, or its
    account or QOS may not use it (``AllowAccounts``/``DenyAccounts``/``AllowQos``/``DenyQos``)."""
    account, qos = job.account.lower(), job.qos.lower()
    if part.unreadable:
        return f"{UNREAD}: {part.unreadable}"
    if part.state == "DOWN":
        return f"PartitionDown: partition={part.name}"
    if part.state == "INACTIVE":
        return f"PartitionInactive: partition={part.name}"
    if part.max_time is not None and job.time_limit > part.max_time:
        return f"PartitionTimeLimit: partition={part.name} MaxTime={part.max_time_text}"
    if (part.allow_accounts is not None and account not in part.allow_accounts) or account in part.deny_accounts:
        return f"PartitionConfig: partition={part.name} account={account} may not use it"
    if (part.allow_qos is not None and qos not in part.allow_qos) or qos in part.deny_qos:
        return f"PartitionConfig: partition={part.name} qos={qos} may not use it"
    return ""


class _Builder:
    """The caps, per-job maxima, shapes and blocks of one listing, collected job by job."""

    def __init__(self, gov: Governance, node_types: Mapping[str, str]) -> None:
        self.gov = gov
        types: dict[str, set[str]] = {}
        for node, kind in node_types.items():
            types.setdefault(kind.lower(), set()).add(node)
        self.of_type = {kind: frozenset(nodes) for kind, nodes in types.items()}
        self.groups: dict[tuple[str, str, str, int, str], set[str]] = {}  # (reason, scope, unit, limit, type)
        self.per_job: dict[str, tuple[int, str]] = {}
        self.blocked: dict[str, str] = {}
        self.shapes: dict[str, Shape] = {}
        self._steps: dict[tuple[Shape, tuple[str, object]], Shape] = {}
        self.acct_jobs: dict[str, list[str]] = {}  # account -> its jobs in the listing
        self.acct_groups: dict[tuple[str, str, str, int, str], set[str]] = {}  # account limits -> accounts under them
        self.acct_bad: dict[str, str] = {}  # account -> why its limits are not known (a row that did not read)
        self.pending: set[str] = set()
        #: (account, user, QOS, partitions, time limit) -> (its groups, per-job maximum, shape, why held back)
        self._recipes: dict[tuple[str, str, str, str, float], tuple] = {}
        self._touched: list[tuple[str, str, str, int, str]] = []  # the groups the job being worked out joined
        self._why: str | None = None  # why the job being worked out is held back

    def nodes(self, kind: str) -> frozenset[str]:
        return self.of_type.get(kind, frozenset())

    def add(self, reason: str, scope: str, unit: str, limit: int, member: str, kind: str = "",
            to: dict[tuple[str, str, str, int, str], set[str]] | None = None) -> None:
        key = (reason, scope, unit, limit, kind)
        (self.groups if to is None else to).setdefault(key, set()).add(member)
        if to is None:
            self._touched.append(key)

    def gpus(self, reason: str, scope: str, untyped: int | None, typed: GpuLimits, member: str,
             to: dict[tuple[str, str, str, int, str], set[str]] | None = None) -> None:
        """A group GPU limit, untyped and per type (``scope`` is completed with ``gres/gpu[:type]=N``)."""
        if untyped is not None:
            self.add(reason, f"{scope} gres/gpu={untyped}", "gpus", untyped, member, to=to)
        for kind, n in typed:
            self.add(reason, f"{scope} gres/gpu:{kind}={n}", "gpus", n, member, kind, to=to)

    def job_max(self, job_id: str, limit: int | None, typed: GpuLimits, label: str) -> None:
        if limit is not None and (job_id not in self.per_job or limit < self.per_job[job_id][0]):
            self.per_job[job_id] = (limit, f"{label} gres/gpu={limit} per job")
        for kind, n in typed:
            self.bound(job_id, Bound(self.nodes(kind), n, f"{label} gres/gpu:{kind}={n} per job"))

    def bound(self, job_id: str, bound: Bound) -> None:
        self._reshape(job_id, ("bound", bound))

    def shape(self, job_id: str, **kw: tuple[int, str]) -> None:
        for key, value in kw.items():
            self._reshape(job_id, (key, value))

    def _reshape(self, job_id: str, step: tuple[str, object]) -> None:
        """The job's shape with one more limit; shapes are shared values, each step made once per listing
        (most jobs of a partition and QOS have the same shape: a dict lookup, not a new Shape)."""
        s = self.shapes.get(job_id, NO_SHAPE)
        key = (s, step)
        got = self._steps.get(key)
        if got is None:
            got = self._steps[key] = _step(s, step)
        self.shapes[job_id] = got

    def block(self, job: SlurmJob, why: str) -> None:
        """Why the jobs like ``job`` may not start (the first reason found; kept for the pending ones)."""
        self._why = self._why or why

    def qos(self, q: Qos, j: SlurmJob) -> None:
        i = j.job_id
        if q.unreadable:
            self.block(j, f"{UNREAD}: {q.unreadable}")
            return
        self.gpus("QOSGrpGRES", f"qos={q.name}", q.grp_gpus, q.grp_gpus_typed, i)
        if q.grp_jobs is not None:
            self.add("QOSGrpJobsLimit", f"qos={q.name} GrpJobs={q.grp_jobs}", "jobs", q.grp_jobs, i)
        self.gpus("QOSMaxGRESPerUser", f"qos={q.name} user={j.user}", q.max_gpus_per_user, q.max_gpus_per_user_typed, i)
        if q.max_jobs_per_user is not None:
            self.add("QOSMaxJobsPerUserLimit", f"qos={q.name} user={j.user} MaxJobsPU={q.max_jobs_per_user}", "jobs",
                     q.max_jobs_per_user, i)
        self.gpus("QOSMaxGRESPerAccount", f"qos={q.name} account={j.account}", q.max_gpus_per_account,
                  q.max_gpus_per_account_typed, i)
        if q.max_jobs_per_account is not None:
            self.add("QOSMaxJobsPerAccountLimit", f"qos={q.name} account={j.account} MaxJobsPA={q.max_jobs_per_account}",
                     "jobs", q.max_jobs_per_account, i)
        self.job_max(i, q.max_gpus_per_job, q.max_gpus_per_job_typed, f"QOSMaxGRESPerJob: qos={q.name}")
        if q.max_gpus_per_node is not None:
            self.shape(i, per_node=(q.max_gpus_per_node, f"QOSMaxGRESPerNode: qos={q.name} gres/gpu={q.max_gpus_per_node} per node"))
        for kind, n in q.max_gpus_per_node_typed:
            self.bound(i, Bound(self.nodes(kind), n, f"QOSMaxGRESPerNode: qos={q.name} gres/gpu:{kind}={n} per node",
                                per_node=True))

    def assoc(self, j: SlurmJob, account: str, partition: str) -> None:
        i = j.job_id
        jobs = self.acct_jobs.get(account)
        if jobs is None:  # the account's chain, once per account (its caps are over accounts, then jobs)
            jobs = self.acct_jobs[account] = []
            for a in self.gov.account_chain(account):
                if a.unreadable:
                    self.acct_bad.setdefault(account, f"{UNREAD}: {a.unreadable}")
                    continue
                self.gpus("AssocGrpGRES", f"account={a.account}", a.grp_gpus, a.grp_gpus_typed, account, to=self.acct_groups)
                if a.grp_jobs is not None:
                    self.add("AssocGrpJobsLimit", f"account={a.account} GrpJobs={a.grp_jobs}", "jobs", a.grp_jobs, account,
                             to=self.acct_groups)
            bad_account = self.gov.doubtful[0]
            if bad_account and account not in self.gov._accounts:  # its row may be the one that did not read
                self.acct_bad[account] = f"{UNREAD}: account {account} not read; {bad_account}"
        jobs.append(i)
        if account in self.acct_bad:
            self.block(j, self.acct_bad[account])
        u = self.gov.user_row(account, j.user, partition)
        if u is None:
            if account in self.gov.doubtful[1]:
                self.block(j, f"{UNREAD}: user {j.user} of account {account} not read; a user row of it did not read")
            return
        if u.unreadable:
            self.block(j, f"{UNREAD}: {u.unreadable}")
            return
        self.gpus("AssocGrpGRES", f"account={u.account} user={u.user}", u.grp_gpus, u.grp_gpus_typed, i)
        if u.max_jobs is not None:
            self.add("AssocMaxJobsLimit", f"account={u.account} user={u.user} MaxJobs={u.max_jobs}", "jobs", u.max_jobs, i)
        self.job_max(i, u.max_gpus_per_job, u.max_gpus_per_job_typed, f"AssocMaxGRESPerJob: account={u.account} user={u.user}")

    def partitions(self, j: SlurmJob) -> list[PartitionLimits]:
        """The partitions of ``j`` that may start it (a running job: the one it runs in); blocks a pending
        job that none may start."""
        names = [p for p in j.partition.split(",") if p]
        known = [self.gov.partitions[p] for p in names if p in self.gov.partitions]
        refusals = [(p, partition_refusal(p, j)) for p in known]
        fit = [p for p, why in refusals if not why]
        if refusals and not fit and len(known) == len(names):
            self.block(j, refusals[0][1])
            return known  # blocked: its partitions' limits are listed all the same
        return fit

    def job(self, j: SlurmJob) -> None:
        """The limits of one job. Jobs of one user, account, QOS, partition list and time limit have the same
        ones: the first such job's are worked out and the others' copied (a few set insertions each); what
        holds a job back applies to the pending ones only."""
        i = j.job_id
        if j.pending:
            self.pending.add(i)
        sig = (j.account.lower(), j.user, j.qos.lower(), j.partition, j.time_limit)
        recipe = self._recipes.get(sig)
        if recipe is None:
            self._touched, self._why = [], None
            self._fresh(j)
            recipe = self._recipes[sig] = (tuple(self._touched), self.per_job.get(i), self.shapes.get(i), self._why)
            self.acct_jobs[sig[0]].pop()  # appended below, as for every job
        keys, top, shape, why = recipe
        for key in keys:
            self.groups[key].add(i)
        if top is not None:
            self.per_job[i] = top
        if shape is not None:
            self.shapes[i] = shape
        if why is not None and j.pending:  # a running job is Slurm's: never held back
            self.blocked[i] = why
        self.acct_jobs[sig[0]].append(i)

    def _fresh(self, j: SlurmJob) -> None:
        if self.gov.unread:
            self.block(j, f"{UNREAD}: {self.gov.unread}")
        account, own_qos = j.account.lower(), j.qos.lower()
        parts = self.partitions(j)
        self.assoc(j, account, parts[0].name if len(parts) == 1 else "")
        qos_names = [own_qos] + [p.qos for p in parts if p.qos and p.qos != own_qos]
        for name in dict.fromkeys(qos_names):  # the partitions' QOS beside the job's own (each once)
            q = self.gov.qos.get(name)
            if q is not None:
                self.qos(q, j)
            elif self.gov.doubtful[2]:
                self.block(j, f"{UNREAD}: qos {name} not read; {self.gov.doubtful[2]}")
        for p in parts:
            if p.max_nodes is not None:
                self.shape(j.job_id, nodes=(p.max_nodes, f"PartitionNodeLimit: partition={p.name} MaxNodes={p.max_nodes}"))
            if p.min_nodes is not None:
                self.shape(j.job_id, min_nodes=(p.min_nodes, f"PartitionNodeLimit: partition={p.name} MinNodes={p.min_nodes}"))

    def limits(self, held: Mapping[str, dict[str, int]]) -> Limits:
        # an account limit over the same accounts as a tighter one of the same kind adds nothing (a deep
        # tree's ancestors over one busy account): kept once, the tightest
        tightest: dict[tuple[str, str, frozenset[str]], tuple[str, str, int]] = {}
        for (reason, scope, unit, limit, kind), accounts in self.acct_groups.items():
            key = (unit, kind, frozenset(accounts))
            if key not in tightest or limit < tightest[key][2]:
                tightest[key] = (reason, scope, limit)
        for (unit, kind, accounts), (reason, scope, limit) in tightest.items():
            self.groups[(reason, scope, unit, limit, kind)] = {i for a in accounts for i in self.acct_jobs[a]}
        caps = []
        totals = {i: sum(c.values()) for i, c in held.items()}
        by_type: dict[str, dict[str, int]] = {}  # type -> job -> its GPUs of that type (the typed caps')
        for (reason, scope, unit, limit, kind), ids in sorted(self.groups.items()):
            nodes = self.nodes(kind) if kind else None
            if unit == "jobs":
                counted = {i: 1 for i in ids if i in held}
            elif nodes is None:
                counted = {i: totals[i] for i in ids if i in held}
            else:
                if kind not in by_type:
                    by_type[kind] = {i: sum(g for n, g in c.items() if n in nodes) for i, c in held.items()}
                counted = {i: by_type[kind][i] for i in ids if i in held}
            caps.append(Cap(reason, scope, frozenset(ids), limit, unit, MappingProxyType(counted), nodes))
        return Limits(caps=tuple(caps), per_job=MappingProxyType(self.per_job), blocked=MappingProxyType(self.blocked),
                      shapes=MappingProxyType(self.shapes))


def limits_for(gov: Governance, jobs: Sequence[SlurmJob], promised: Mapping[str, Mapping[str, int]] | None = None,
               node_types: Mapping[str, str] | None = None) -> Limits:
    """The limits over the active jobs of ``jobs`` (the round's listing, non-Hops jobs included: their GPUs
    count) that ``gov`` sets, with Slurm's reason names. ``promised``: pending jobs already released onto
    GPUs (job id -> config), held like running ones; ``node_types``: node -> GPU type (per-type limits)."""
    promised = promised or {}
    build = _Builder(gov, node_types or {})
    held: dict[str, dict[str, int]] = {}
    for j in jobs:
        if not (j.pending or j.active):
            continue
        config = _held(j, promised)
        if config is not None:
            held[j.job_id] = config
        build.job(j)
    return build.limits(held)


__all__ = ["Governance", "UNREAD", "limits_for", "partition_refusal"]
