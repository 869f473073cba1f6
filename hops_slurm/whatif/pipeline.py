"""The what-if from end to end: export file -> selection -> simulator jobs -> sides -> rows.

Where it sits: called by ``hops-slurm whatif`` (:mod:`hops_slurm.cli.whatif_cmd`) and the 10,000-job
benchmark (:mod:`hops_slurm.tools.bench.whatif_bench`); each step is its own module (see :mod:`hops_slurm.whatif`).
Raises :class:`HopsError` only when nothing can be replayed; bad rows are :class:`Problem` entries.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hops_slurm.config import SiteConfig
from hops_slurm.errors import HopsError
from hops_slurm.sim.cluster_spec import ClusterSpec
from hops_slurm.sim.runner import Options
from hops_slurm.whatif.assumptions import Assumptions, Derived, derive_all
from hops_slurm.whatif.exports import Selection, read_export, select
from hops_slurm.whatif.history import Problem
from hops_slurm.whatif.output import Row, row_of
from hops_slurm.whatif.replay import RECORDED, Side, infer_cluster, recorded_records, run_policies

#: the site's status quo twice (age-only backfill, and the multifactor priority with fair share a site
#: configures: planner.baselines.slurm_multifactor), then Hops
DEFAULT_POLICIES = ("slurm-backfill", "slurm-multifactor", "hops")


class NothingToReplay(HopsError):
    """No job of the export can be replayed; ``problems`` says why for each row."""

    def __init__(self, message: str, problems: list[Problem]) -> None:
        super().__init__(message)
        self.problems = problems


@dataclass
class WhatIf:
    selection: Selection
    derived: list[Derived]
    cluster: ClusterSpec
    inferred: bool
    sides: list[Side]
    rows: list[Row]
    seconds: dict[str, float] = field(default_factory=dict)  # wall time per step

    @property
    def problems(self) -> list[Problem]:
        return self.selection.reading.problems

    def summary(self) -> str:
        s = self.selection
        dropped = len(s.jobs) - len(self.derived)
        extra = f", {dropped} of them not replayable on the cluster" if dropped else ""
        return f"{s.summary()}{extra}; {len(self.derived)} jobs replayed"


def run_whatif(export: Path, cluster: ClusterSpec | None, assumptions: Assumptions,
               policies: Sequence[str] = DEFAULT_POLICIES, options: Options = Options(),
               progress: bool = False, site: SiteConfig | None = None) -> WhatIf:
    """The what-if of ``export``; ``site``: the configuration the Hops side's engine runs with
    (:func:`hops_slurm.whatif.replay.run_policies`; None: the documented defaults)."""
    clock = time.perf_counter()
    seconds: dict[str, float] = {}

    def lap(step: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        seconds[step] = now - clock
        clock = now

    selection = select(read_export(export))
    lap("read")
    inferred = cluster is None
    if cluster is None:
        if not selection.jobs:
            raise NothingToReplay(f"no job in the export can be replayed ({selection.summary()})", selection.reading.problems)
        cluster = infer_cluster(selection.jobs)
    per_node = max(k.gpus for k in cluster.server_kind)
    derived = derive_all(selection.jobs, assumptions, cluster.total_gpus, per_node, selection.reading.problems)
    if not derived:
        raise NothingToReplay(f"no job in the export can be replayed ({selection.summary()})", selection.reading.problems)
    recorded = Side(RECORDED, recorded_records(selection.jobs, derived))
    lap("assumptions")
    sides = [recorded]
    for side in run_policies(cluster, derived, policies, options, progress, site):
        sides.append(side)
        seconds[side.label] = side.result.wall_seconds if side.result else 0.0
    lap("simulation")
    rows = [row_of(s, cluster.total_gpus) for s in sides]
    return WhatIf(selection, derived, cluster, inferred, sides, rows, seconds)
