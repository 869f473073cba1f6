"""What a forecast of the accuracy bench expects to arrive (``HOPS_BENCH_FORECAST_ARRIVALS``, ``_BESIDE``).

Where it sits: beside :mod:`hops_slurm.tools.bench.forecast_bench`, which runs each Hops forecast with the
arrivals :class:`Expected` names: none (what the daemon does by default), the last window's submissions
again (the daemon's ``[engine] forecast_arrivals``, :mod:`hops_slurm.sim.forecast_arrivals`), or the run's
own later submissions (:func:`later_submissions`, the "oracle": no daemon can know them; the bench uses them
to split a forecast's error into what the later jobs make and what the forecast itself gets wrong).
"""

from __future__ import annotations

from dataclasses import dataclass

from hops_slurm.core.rounds import LoopSettings, run_rounds
from hops_slurm.errors import HopsError
from hops_slurm.sim.cluster_spec import ClusterSpec
from hops_slurm.sim.forecast_arrivals import MARK, fresh
from hops_slurm.sim.runner import Options
from hops_slurm.sim.sim_backend import SimBackend, SimSettings
from hops_slurm.sim.workload import JobSpec
from planner.policies import make_policy
from planner.views import JobView

#: the longest window or horizon the variable takes, in seconds (about 4 months)
LONGEST = 1e7


@dataclass(frozen=True)
class Expected:
    """The arrivals each Hops forecast of a run expects: the submissions of the last ``window`` seconds again
    (every window up to ``horizon``; the daemon's ``[engine] forecast_arrivals``), or with ``oracle`` the
    run's own later submissions, each as the round after its submission saw it (what the forecast would
    give if it knew the future jobs: a bound, not something a daemon can do)."""

    window: float = 0.0
    horizon: float | None = None
    oracle: bool = False

    @classmethod
    def parse(cls, text: str) -> Expected:
        """``HOPS_BENCH_FORECAST_ARRIVALS``: ``W`` (seconds of submissions expected again once), ``W:H`` (again
        every W seconds up to H ahead) or ``oracle``."""
        if text.strip() == "oracle":
            return cls(oracle=True)
        try:
            w, _, h = text.partition(":")
            got = cls(float(w), float(h) if h else None)
        except ValueError:
            raise HopsError(f"HOPS_BENCH_FORECAST_ARRIVALS: {text[:30]!r} is not W, W:H in seconds or oracle") from None
        if not (0.0 <= got.window <= LONGEST and (got.horizon is None or 0.0 <= got.horizon <= LONGEST)):
            raise HopsError(f"HOPS_BENCH_FORECAST_ARRIVALS: {text[:30]!r}: W and H must be in [0, {LONGEST:g}] seconds")
        return got

    @property
    def tag(self) -> str:
        """The record name's tail ('' for none)."""
        if self.oracle:
            return "_oracle"
        if self.window <= 0:
            return ""
        return f"_a{self.window:g}" + (f"h{self.horizon:g}" if self.horizon else "")

    @property
    def label(self) -> str:
        """How a table names it."""
        if self.oracle:
            return "the run's later submissions (oracle)"
        if self.window <= 0:
            return "the jobs of now (the default)"
        again = f", every {self.window:g} s up to {self.horizon:g} s ahead" if self.horizon else ", once"
        return f"the last {self.window:g} s again{again}"


def later_submissions(cluster: ClusterSpec, specs: tuple[JobSpec, ...], options: Options, policy_name: str,
                      round_seconds: float) -> list[JobView]:
    """Every job of the run as the first round boundary after its submission saw it, made fresh at its
    submission time (:func:`hops_slurm.sim.forecast_arrivals.fresh`), from a run of its own without
    forecasts (a forecast never changes the run: it plans with a copy of the policy)."""
    backend = SimBackend(cluster, specs, SimSettings(costs=options.costs))
    seen: dict[str, JobView] = {}

    def collect(now: float) -> None:
        for v in backend.job_views(fragment=False):
            if v.job_id not in seen:
                seen[v.job_id] = fresh(v, f"{v.job_id}{MARK}0", v.submit_time)

    try:
        run_rounds(backend, make_policy(policy_name), LoopSettings(round_seconds, options.refresh_seconds), on_round=collect)
    finally:
        backend.close()
    return sorted(seen.values(), key=lambda v: (v.submit_time, v.job_id))



__all__ = ["Expected", "LONGEST", "later_submissions"]
