"""Where the site's governance is read, and what is kept when a read fails: the last good reading.

Where it sits: the live backend (:class:`hops_slurm.engine.live_backend.SlurmBackend`) asks
:meth:`GovernanceSource.current` for the round's :class:`hops_slurm.slurm.gov_limits.Governance`. It reads,
once a minute at most: ``scontrol show config`` (is there accounting? which cluster is this?), the
partitions (``scontrol show partition``, slurmctld), and with accounting the associations and QOS
(``sacctmgr``, slurmdbd) and fair share (``sshare``).

Fails closed (docs/governance.md, "When a read fails"; docs/security.md): each of those is kept as last read
well until a read of it succeeds; a failed read (a timeout, slurmdbd restarting) is logged once (again
only when its message changes) and tried again at the next refresh (``retry``), never after a long
window without limits. Until a first good reading of what Slurm enforces is made (the partitions, and with
accounting configured the associations and QOS), every pending job is held back, named ``HopsLimitsUnread``;
running jobs are left alone. A cluster whose slurm.conf has no accounting storage has no association or QOS
limits to keep (Slurm enforces none): its partitions are kept and ``sacctmgr`` is not asked. Each row or
line that does not read is logged alone (once) and holds back only the jobs it governs
(:mod:`hops_slurm.slurm.assoc`).
"""

from __future__ import annotations

import logging
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

from hops_slurm.errors import GovernanceError
from hops_slurm.slurm.api import SlurmJob
from hops_slurm.slurm.assoc import ASSOC_ARGV, QOS_ARGV, SSHARE_ARGV, lines_of, parse_assoc, parse_qos, parse_sshare
from hops_slurm.slurm.gov_limits import Governance, limits_for
from hops_slurm.slurm.partitions import PARTITION_ARGV, parse_partitions
from planner.governance import Limits

log = logging.getLogger(__name__)

CONFIG_ARGV = ["scontrol", "show", "config"]
NO_ACCOUNTING = "accounting_storage/none"
#: how `scontrol show config` says a cluster has no accounting storage (22.05; 23.02 and later print "(null)")
NO_ACCOUNTING_FORMS = frozenset({NO_ACCOUNTING, "(null)", "", "none"})
MAX_LOGGED = 1000  # distinct problems remembered (each logged once)
MAX_PER_READ = 50  # problem lines logged per read (then one line with the count)

Runner = Callable[[list[str]], str]


def parse_config(text: str) -> dict[str, str]:
    """``scontrol show config``: ``Key = Value`` lines -> {key: value} (other lines left out)."""
    out: dict[str, str] = {}
    for _, line in lines_of(text, "scontrol show config"):
        key, sep, value = line.partition("=")
        if sep and key.strip() and " " not in key.strip():
            out.setdefault(key.strip(), value.strip())
    return out


class GovernanceSource:
    """The cluster's governance, read with ``run`` (argv -> stdout; raises on failure) at most every
    ``ttl`` seconds, and ``retry`` seconds after a read that failed (the next refresh)."""

    def __init__(self, run: Runner, *, ttl: float = 60.0, retry: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.run, self.ttl, self.retry, self.clock = run, ttl, retry, clock
        self._good: dict[str, Any] = {}  # what -> its last good reading
        self._failed: dict[str, str] = {}  # what -> the message of its latest failed read
        self._logged: set[str] = set()
        self._at: float | None = None
        self._got: Governance | None = None

    @property
    def error(self) -> str:
        """The failures of the latest read ("" when every read succeeded)."""
        return "; ".join(self._failed.values())

    def _read(self, what: str, argv: list[str], parse: Callable[[str, list[str]], Any]) -> None:
        problems: list[str] = []
        try:
            value = parse(self.run(argv), problems)
        except Exception as exc:  # noqa: BLE001 - a failed read keeps the last good one
            message = str(exc) if isinstance(exc, GovernanceError) else f"{' '.join(argv[:3])}: {exc}"
            if self._failed.get(what) != message:
                kept = "keeping the last good reading" if what in self._good else "none read yet: pending jobs held back"
                log.warning("governance: %s not read (%s); %s, read again at the next refresh", what, message[:300], kept)
            self._failed[what] = message
            return
        if what in self._failed:
            log.info("governance: %s read again", what)
            self._failed.pop(what)
        self._good[what] = value
        fresh = [p for p in problems if p not in self._logged]
        for p in fresh[:MAX_PER_READ]:
            log.warning("governance: skipped: %s", p[:300])
        if len(fresh) > MAX_PER_READ:
            log.warning("governance: skipped %d more rows of %s that did not read", len(fresh) - MAX_PER_READ, what)
        if len(self._logged) < MAX_LOGGED:
            self._logged.update(fresh[:MAX_LOGGED - len(self._logged)])

    def accounting(self) -> bool:
        """Whether slurm.conf has accounting storage (unknown counts as yes: its limits are then expected).
        None is ``accounting_storage/none`` on 22.05 and ``(null)`` (the type unset) from 23.02 on."""
        config = self._good.get("config")
        return config is None or config.get("AccountingStorageType", "").strip() not in NO_ACCOUNTING_FORMS

    def current(self) -> Governance:
        now = self.clock()
        wait = self.retry if set(self._failed) - {"fairshare"} else self.ttl  # fair share orders; it holds nothing
        if self._got is not None and self._at is not None and now - self._at < wait:
            return self._got
        self._at = now
        self._read("config", CONFIG_ARGV, lambda text, _: parse_config(text))
        self._read("partitions", PARTITION_ARGV, parse_partitions)
        if self.accounting():
            self._read("associations", ASSOC_ARGV, lambda text, problems: _problems(parse_assoc(text), problems))
            self._read("qos", QOS_ARGV, lambda text, problems: _problems(parse_qos(text), problems))
            self._read("fairshare", SSHARE_ARGV, parse_sshare)
        else:
            for what in ("associations", "qos", "fairshare"):
                self._good.pop(what, None)
                self._failed.pop(what, None)
        needed = ["partitions"] + (["associations", "qos"] if self.accounting() else [])
        unread = "; ".join(self._failed.get(w, f"{w} not read") for w in needed if w not in self._good)
        cluster = (self._good.get("config") or {}).get("ClusterName", "")
        assoc = tuple(a for a in self._good.get("associations", ()) if not cluster or not a.cluster or a.cluster == cluster)
        self._got = Governance(associations=assoc, qos=MappingProxyType(dict(self._good.get("qos", {}))),
                               fairshare=MappingProxyType(dict(self._good.get("fairshare", {}))),
                               partitions=MappingProxyType(dict(self._good.get("partitions", {}))), unread=unread)
        return self._got


def _problems(parsed: Any, problems: list[str]) -> Any:
    rows = parsed.values() if isinstance(parsed, dict) else parsed
    problems.extend(r.unreadable for r in rows if r.unreadable)
    return parsed


def subprocess_runner(env: Mapping[str, str] | None, timeout: float = 30.0) -> Runner:
    """A :data:`Runner` over ``sacctmgr``, ``sshare`` and ``scontrol`` on PATH (argv lists, never a shell)."""
    def run(argv: list[str]) -> str:
        try:
            proc = subprocess.run(argv, env=dict(env) if env is not None else None, capture_output=True, text=True,
                                  encoding="utf-8", errors="replace", timeout=timeout, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise GovernanceError(f"{' '.join(argv[:3])}: {exc}") from None
        if proc.returncode != 0:
            raise GovernanceError(f"{' '.join(argv[:3])}: {(proc.stderr or proc.stdout).strip()[:200]}")
        return proc.stdout
    return run


def jobs_fair_share(source: GovernanceSource | None, jobs: Iterable[SlurmJob]) -> dict[str, float]:
    """Job id -> its association's FairShare (jobs whose association sshare does not list: none)."""
    gov = source.current() if source is not None else None
    if gov is None or not gov.fairshare:
        return {}
    shares = gov.fairshare
    return {j.job_id: shares[(j.account.lower(), j.user)] for j in jobs if (j.account.lower(), j.user) in shares}


def jobs_limits(source: GovernanceSource | None, jobs: Iterable[SlurmJob],
                promised: Mapping[str, Mapping[str, int]] | None = None,
                node_types: Mapping[str, str] | None = None) -> Limits | None:
    """The limits of this listing, or None without a source (the simulator, a test's fake Slurm)."""
    if source is None:
        return None
    return limits_for(source.current(), list(jobs), promised, node_types)


__all__ = ["GovernanceSource", "CONFIG_ARGV", "parse_config", "subprocess_runner", "jobs_fair_share", "jobs_limits"]
