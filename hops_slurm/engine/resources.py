"""The engine's long-lived resources, as every step of its cycle sees them: one typed object, whole once open.

Where it sits: :meth:`hops_slurm.engine.engine.Engine.open` makes one :class:`Resources` after taking the
lock and opening the store, the journal, the engine state and the records file; each named step of the
refresh and the round (:mod:`hops_slurm.engine.refresh`, :mod:`hops_slurm.engine.round`) is a plain
function of a session (what one cycle knows: :mod:`hops_slurm.engine.cycle`) and these resources, and the
per-job bookkeeping they call (:mod:`hops_slurm.engine.bookkeeping`) takes them too. Nothing here is
Optional but what is absent by design: the profiler and the checkpoint marks in a dry run, the store in a
dry run without a store file, the offer writer without ``[engine] offer_file``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hops_slurm.config import SiteConfig
from hops_slurm.engine.checkpoints import Marks
from hops_slurm.engine.estimates import StoreReader
from hops_slurm.engine.exporter import EngineMetrics
from hops_slurm.engine.known_jobs import ViewCache
from hops_slurm.engine.live_backend import SlurmBackend
from hops_slurm.engine.offer_file import OfferWriter
from hops_slurm.engine.profiling import ProfilerFlow
from hops_slurm.engine.reasons import Reasons
from hops_slurm.engine.record_limits import RefreshBudget
from hops_slurm.engine.restarts import RestartCosts
from hops_slurm.engine.runtime_records import SeenFiles
from hops_slurm.engine.state import EngineState, JobState
from hops_slurm.engine.userfiles import Owner
from hops_slurm.engine.written import Written
from hops_slurm.journal import Journal
from hops_slurm.slurm.api import SlurmApi
from hops_slurm.slurm.enact import Enactor
from hops_slurm.slurm.scope import HopsScope
from planner.views import Policy

if TYPE_CHECKING:
    from hops_slurm.core.interface import Planning


@dataclass(frozen=True)
class Places:
    """The engine's directories and files (``[paths]``, ``[engine]``)."""

    state_dir: Path
    metrics_dir: Path  # each job's place for its runtime records and checkpoint marks
    probe_dir: Path


@dataclass
class Counters:
    """What the engine counts across cycles: the round number (stored), the refreshes, and this refresh's
    budget of records stored per user (:mod:`hops_slurm.engine.record_limits`)."""

    round_no: int = 0
    refreshes: int = 0
    record_budget: RefreshBudget = field(default_factory=RefreshBudget)


@dataclass
class Resources:
    """See the module docstring. ``tracked``: job id -> its state, for every job the engine tracks;
    ``last_planning``: the first planning of the last round that planned (the offer step's fallback)."""

    config: SiteConfig
    scope: HopsScope  # the Hops partitions: jobs of others are never tracked (hops_slurm.slurm.scope)
    api: SlurmApi
    now: Callable[[], float]
    owners: Callable[[str], Owner]
    dry_run: bool
    places: Places
    store: Any  # estimator.store.ThroughputStore; None in a dry run without a store file
    reader: StoreReader
    journal: Journal
    state: EngineState
    records_file: Any  # hops_slurm.report.source.RecordsFile; None in a dry run (nothing written)
    enactor: Enactor
    backend: SlurmBackend
    profiler: ProfilerFlow | None
    marks: Marks | None
    offers: OfferWriter | None
    policy: Policy
    restarts: RestartCosts
    tracked: dict[str, JobState]
    seen_files: SeenFiles
    written: Written
    metrics: EngineMetrics
    views: ViewCache
    reasons: Reasons
    counters: Counters = field(default_factory=Counters)
    last_planning: Planning | None = None
    #: (the last list of nodes, node -> its GPU type): :func:`hops_slurm.engine.bookkeeping.node_types`
    types_memo: tuple[object, dict[str, str]] | None = None

    def set_aside(self, js: JobState, reason: str) -> None:
        """Set ``js`` aside (one bad job never stops the round: :mod:`hops_slurm.engine.aside`): not
        scheduled, its profiling forgotten."""
        js.aside = reason
        if self.profiler is not None:
            self.profiler.forget(js.job_id)

    def estimator(self) -> Any:
        """The estimator on the current snapshot (:meth:`hops_slurm.engine.estimates.StoreReader.estimator`)."""
        return self.reader.estimator(self.backend.snapshot)
