"""What the scheduler may know about throughput in simulation: probe runs and running jobs only.

Data flow: the simulated backend reports probe results (:meth:`Observations.record_probe`) and every
stretch a job runs (:meth:`Observations.record_run`); it asks :meth:`Observations.throughput_fn` for the
:class:`planner.views.ThroughputFn` handed to policies in each :class:`planner.views.JobView`.

Knowledge:

* Type level (probes, paper §3.2): per job and GPU type, the 1-GPU throughput and the 2-GPU
  throughput on one server and across two, measured on the profiler partition (best servers of the
  type, speed 1.0). Other counts extrapolate per doubling by the measured 2-GPU efficiency:
  thr(n) = thr1 * n * e ** log2(n), e = thr2 / (2 * thr1) (one server or spread).
* Job level: once a job ran at (type, n, spread), that measurement (divided by the server class's
  learned factor) replaces the extrapolation.
* Entity level (server class): the ratio measured / type-level prediction, averaged over every job that
  ran on one class, is the class's learned speed factor; configs are scaled by their slowest class's
  factor. Type-level schedulers receive the same numbers but plan by type only.

SEAM: this module stands in for ``estimator.estimate`` (the 3-layer SQLite store and iteration-time
model). When it lands, :meth:`Observations.throughput_fn`, :func:`age_eq9` and :func:`sensitivity_eq10`
are the three calls to replace; the backend already feeds it the same probe and run measurements.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from planner.views import Config, ThroughputFn


@dataclass(frozen=True)
class ProbeResult:
    """One job's probe on one GPU type: samples/s at 1 GPU, 2 GPUs on one server, 2 across two."""

    one: float
    two_consolidated: float
    two_spread: float


@dataclass
class _ClassFactor:
    total: float = 0.0
    count: int = 0

    @property
    def value(self) -> float:
        return self.total / self.count if self.count else 1.0


@dataclass
class Observations:
    """Everything measured so far in one simulation (shared across jobs, like the store)."""

    node_type: Mapping[str, str]  # node -> GPU type
    node_class: Mapping[str, str]  # node -> server class
    probes: dict[str, dict[str, ProbeResult]] = field(default_factory=dict)
    runs: dict[str, dict[tuple[str, int, bool], float]] = field(default_factory=dict)
    classes: dict[str, _ClassFactor] = field(default_factory=dict)

    def record_probe(self, job_id: str, gpu_type: str, result: ProbeResult) -> None:
        self.probes.setdefault(job_id, {})[gpu_type] = result

    def _type_level(self, job_id: str, gpu_type: str, n: int, spread: bool) -> float:
        probe = self.probes.get(job_id, {}).get(gpu_type)
        if probe is None or probe.one <= 0:
            return 0.0
        if n == 1:
            return probe.one
        two = probe.two_spread if spread else probe.two_consolidated
        eff = min(max(two / (2 * probe.one), 0.0), 1.0)
        return probe.one * n * eff ** math.log2(n)

    def _base(self, job_id: str, gpu_type: str, n: int, spread: bool) -> float:
        measured = self.runs.get(job_id, {}).get((gpu_type, n, spread))
        return measured if measured is not None else self._type_level(job_id, gpu_type, n, spread)

    def record_run(self, job_id: str, config: Config, measured: float) -> None:
        """A job ran in ``config`` at ``measured`` samples/s (what the runtime recorder reports)."""
        types = {self.node_type[n] for n in config}
        if len(types) != 1 or measured <= 0:
            return  # mixed-type runs teach nothing reusable at type level here
        gpu_type = types.pop()
        n, spread = sum(config.values()), len(config) > 1
        classes = {self.node_class[n_] for n_ in config}
        if len(classes) == 1:
            cls = next(iter(classes))
            predicted = self._type_level(job_id, gpu_type, n, spread)
            if predicted > 0:
                f = self.classes.setdefault(cls, _ClassFactor())
                f.total += measured / predicted
                f.count += 1
        factor = min(self.class_factor(c) for c in classes)
        self.runs.setdefault(job_id, {})[(gpu_type, n, spread)] = measured / factor

    def class_factor(self, server_class: str) -> float:
        f = self.classes.get(server_class)
        return f.value if f else 1.0

    def estimate(self, job_id: str, config: Config) -> float:
        used = {n: g for n, g in config.items() if g > 0}
        if not used:
            return 0.0
        n, spread = sum(used.values()), len(used) > 1
        types = {self.node_type[x] for x in used}
        base = min(self._base(job_id, t, n, spread) for t in types)
        return base * min(self.class_factor(self.node_class[x]) for x in used)

    def throughput_fn(self, job_id: str) -> ThroughputFn:
        def fn(config: Config) -> float:
            return self.estimate(job_id, config)

        return fn

    def per_gpu(self, job_id: str, gpu_type: str) -> float:
        probe = self.probes.get(job_id, {}).get(gpu_type)
        return probe.one if probe else 0.0


# --- to be replaced by estimator.estimate (see SEAM above) ------------------------------------------


def age_eq9(obs: Observations, job_id: str, total_samples: float, requirements: tuple[int, ...],
            gpus_per_type: Mapping[str, int]) -> float:
    """Eq. 9: sum_j P(type=j) * total_samples / (per-GPU throughput_ij * R_avg), P = N_type / N_cluster.

    Types the job cannot run on (throughput 0) are left out and P renormalised over the rest.
    """
    total = sum(gpus_per_type.values())
    r_avg = sum(requirements) / len(requirements)
    terms = [(g / total, obs.per_gpu(job_id, t)) for t, g in gpus_per_type.items()]
    usable = [(p, thr) for p, thr in terms if thr > 0]
    if not usable:
        return math.inf
    mass = sum(p for p, _ in usable)
    return sum((p / mass) * total_samples / (thr * r_avg) for p, thr in usable)


def sensitivity_eq10(obs: Observations, job_id: str, gpu_type: str) -> float:
    """Eq. 10: thr({0:1}) / per-GPU thr({0:1, 1:1}) on one type (> 1: the job suffers when spread)."""
    probe = obs.probes.get(job_id, {}).get(gpu_type)
    if probe is None or probe.two_spread <= 0:
        return math.inf
    return probe.one / (probe.two_spread / 2)
