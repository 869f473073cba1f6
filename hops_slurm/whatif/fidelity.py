"""How far the what-if's replay of Slurm's own policy lands from what Slurm recorded: a replay to trust
before its projection (issue 23).

Where it sits: after the sides are run (:mod:`hops_slurm.whatif.pipeline`), read by ``hops-slurm
whatif`` (:mod:`hops_slurm.cli.whatif_cmd`), which prints :func:`fidelity_line` and, when the replay misses,
:func:`warning` naming the assumptions that set the simulated schedule apart from Slurm's. The replay is
the first simulated Slurm policy of :data:`SITE_POLICIES` the run has (``slurm-backfill`` first: Slurm's
default scheduler), replayed as Slurm runs (:mod:`hops_slurm.sim.site`: no probes,
scheduling at each submission and end, the jobs' time limits); it is compared on avg wait, avg JCT and
makespan. A metric is close when within :data:`RELATIVE` of the recorded value, or :data:`ABSOLUTE`
seconds of it (jobs of seconds: the tests' recorded exports).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hops_slurm.report.timefmt import format_elapsed
from hops_slurm.whatif.output import Row
from hops_slurm.sim.site import SITE_POLICIES
from hops_slurm.whatif.replay import RECORDED
RELATIVE = 0.10
ABSOLUTE = 30.0
METRICS = (("avg wait", "avg_wait"), ("avg JCT", "avg_jct"), ("makespan", "makespan"))


@dataclass(frozen=True)
class Fidelity:
    policy: str
    #: metric -> (recorded seconds, replayed seconds)
    values: dict[str, tuple[float, float]]

    def close(self, metric: str) -> bool:
        rec, sim = self.values[metric]
        return abs(sim - rec) <= max(RELATIVE * abs(rec), ABSOLUTE)

    @property
    def ok(self) -> bool:
        return all(self.close(m) for m in self.values)


def fidelity(rows: Sequence[Row]) -> Fidelity | None:
    """The replay of the site's policy against the recorded row; None when either is missing."""
    recorded = next((r for r in rows if r.scheduler == RECORDED), None)
    replay = next((r for p in SITE_POLICIES for r in rows if r.scheduler == p and not r.error), None)
    if recorded is None or replay is None:
        return None
    values = {}
    for label, key in METRICS:
        rec, sim = getattr(recorded, key), getattr(replay, key)
        if rec is not None and sim is not None:
            values[label] = (float(rec), float(sim))
    return Fidelity(replay.scheduler, values) if values else None


def _pct(rec: float, sim: float) -> str:
    return f"{(sim - rec) / rec:+.0%}" if rec > 0 else "n/a"


def fidelity_line(f: Fidelity) -> str:
    parts = [f"{m} {format_elapsed(sim)} vs {format_elapsed(rec)} recorded ({_pct(rec, sim)})"
             for m, (rec, sim) in f.values.items()]
    verdict = "within" if f.ok else "NOT within"
    return (f"fidelity: {f.policy} replays the recorded schedule with {'; '.join(parts)}: {verdict} "
            f"{RELATIVE:.0%} (or {ABSOLUTE:g} s)")


def warning(f: Fidelity, *, inferred: bool, assumed_limits: int, replayed: int, limit_seconds: float | None = None) -> str:
    """What sets the replay apart from Slurm, for a replay that misses (one line): the assumptions it made
    where the export is silent, most likely first."""
    off = ", ".join(m for m in f.values if not f.close(m))
    causes = []
    if assumed_limits:
        longest = f" ({format_elapsed(limit_seconds)})" if limit_seconds else ""
        causes.append(f"{assumed_limits} of {replayed} jobs have no recorded time limit and were given the longest "
                      f"recorded run of their partition{longest}; Slurm's backfill plans with limits (export "
                      "Timelimit with --parsable2, or use --json)")
    causes.append("the cluster is inferred from the export's node lists and peak GPU use (pass --cluster FILE)"
                  if inferred else "the cluster is the one --cluster names")
    causes.append(f"{f.policy} stands for the site's scheduler with default weights (priority/multifactor, "
                  "PriorityWeight*, fair share, QOS, reservations, other partitions and CPU jobs on the GPU nodes "
                  "are not in the replay)")
    causes.append("run times are the recorded ones at the recorded GPU count (assumptions: docs/whatif.md)")
    return f"the replay of {f.policy} misses the recorded {off}: " + "; ".join(causes) + \
        "; read the projection with that in mind"


__all__ = ["Fidelity", "fidelity", "fidelity_line", "warning", "SITE_POLICIES", "RELATIVE", "ABSOLUTE"]
