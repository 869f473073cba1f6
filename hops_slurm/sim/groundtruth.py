"""Ground-truth throughput for the simulator: what a job really achieves in a placement.

Data flow: ``hops_slurm/data/gavel/simulation_throughputs.json`` (measured steps/s, Narayanan et al.,
OSDI 2020, MIT License; see hops_slurm/data/README.md) -> :class:`GroundTruth` -> the simulated cluster
advances jobs at ``GroundTruth.throughput(model, config)``. Policies never see this object; they see
the production estimator, fed with what the simulated cluster measures (:mod:`hops_slurm.sim.measure`).

Rules (documented in docs/simulator.md as well):

* Units: the data is steps/s of the whole job at scale factor n (each worker's steps counted), with a
  per-worker batch size. A sample here is one per-worker step times the batch size, so
  samples/s = steps/s x batch size (batch size 1 for models without one: A3C, CycleGAN).
* Consolidated (one server) uses the GPU type's table, spread (two or more servers) the
  ``_unconsolidated`` table. Where the spread value is missing, the consolidated value times
  :data:`SPREAD_FALLBACK` (0.85) is used.
* Counts the data lacks: 3, 5, 6, 7 are linearly interpolated between the measured neighbours
  (2 and 4, 4 and 8). Counts above 8 (e.g. 16) extrapolate from 8 by the last measured doubling's
  gain: thr(n) = thr(8) * g ** log2(n / 8), g = thr(8) / thr(4), clipped to 1 <= g <= 2.
* 0.0 in the data means the model does not fit / was not measured there: the job cannot run there.
* Mixed GPU types in one config: synchronous data-parallel training runs at the pace of its slowest
  member, so the config runs at the spread throughput of its slowest type (min over types).
* Server entity speed: every node has a speed factor (its server kind's from the cluster file, 1.0 for
  the best server of a type, or its own where the file declares the node degraded); a config runs at the spread/consolidated throughput times the smallest
  factor among its nodes (the slowest server paces the job).
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from hops_slurm.errors import HopsError

#: multiplier on the consolidated value where the spread (``_unconsolidated``) measurement is missing
SPREAD_FALLBACK = 0.85
MEASURED_COUNTS = (1, 2, 4, 8)


@dataclass(frozen=True)
class NodeSpeed:
    """What ground truth needs to know about a node: its GPU type and its server kind's speed factor."""

    gpu_type: str
    speed: float = 1.0


def batch_size(model: str) -> int:
    """Per-worker batch size of a Gavel job type (1 for models without one)."""
    m = re.search(r"batch size (\d+)", model)
    return int(m.group(1)) if m else 1


def family(model: str) -> str:
    """Model family of a Gavel job type: ``'ResNet-50 (batch size 64)'`` -> ``'ResNet-50'``."""
    return model.split(" (")[0]


@lru_cache(maxsize=1)
def _load_table() -> dict[str, dict[tuple[str, int], float]]:
    path = resources.files("hops_slurm") / "data" / "gavel" / "simulation_throughputs.json"
    raw = json.loads(path.read_text())
    table: dict[str, dict[tuple[str, int], float]] = {}
    for worker_type, entries in raw.items():
        rows: dict[tuple[str, int], float] = {}
        for key, value in entries.items():
            model, scale = ast.literal_eval(key)
            rows[(str(model), int(scale))] = float(value["null"])
        table[worker_type] = rows
    return table


class GroundTruth:
    """Measured throughput (samples/s) of a model in any config, with the rules of the module docstring."""

    def __init__(self) -> None:
        self._table = _load_table()
        self.gpu_types = tuple(t for t in self._table if not t.endswith("_unconsolidated"))
        self.models = tuple(sorted({m for rows in self._table.values() for (m, _s) in rows}))

    def check_model(self, model: str) -> None:
        if model not in self.models:
            raise HopsError(
                f"unknown model {model!r}: ground truth has measured data for {', '.join(self.models)}"
            )

    def check_gpu_type(self, gpu_type: str) -> None:
        if gpu_type not in self.gpu_types:
            raise HopsError(
                f"GPU type {gpu_type!r} has no measured data; map it onto one of {', '.join(self.gpu_types)}"
            )

    def _measured(self, model: str, gpu_type: str, n: int, spread: bool) -> float:
        cons = self._table[gpu_type].get((model, n), 0.0)
        if not spread or n == 1:
            return cons
        un = self._table.get(f"{gpu_type}_unconsolidated", {}).get((model, n))
        if un is None or (un == 0.0 and cons > 0.0):
            return cons * SPREAD_FALLBACK
        return un

    def steps_per_second(self, model: str, gpu_type: str, n: int, spread: bool) -> float:
        """Whole-job steps/s of ``model`` on ``n`` GPUs of ``gpu_type`` (one server or ``spread``)."""
        if n <= 0:
            return 0.0
        if n in MEASURED_COUNTS:
            return self._measured(model, gpu_type, n, spread)
        if n < 8:
            lo = max(c for c in MEASURED_COUNTS if c < n)
            hi = min(c for c in MEASURED_COUNTS if c > n)
            a = self._measured(model, gpu_type, lo, spread)
            b = self._measured(model, gpu_type, hi, spread)
            if a == 0.0 or b == 0.0:
                return 0.0
            return a + (b - a) * (n - lo) / (hi - lo)
        t8 = self._measured(model, gpu_type, 8, spread)
        t4 = self._measured(model, gpu_type, 4, spread)
        if t8 == 0.0 or t4 == 0.0:
            return 0.0
        gain = min(max(t8 / t4, 1.0), 2.0)
        return t8 * gain ** math.log2(n / 8)

    def samples_per_second(self, model: str, gpu_type: str, n: int, spread: bool) -> float:
        return self.steps_per_second(model, gpu_type, n, spread) * batch_size(model)

    def throughput(self, model: str, config: Mapping[str, int], nodes: Mapping[str, NodeSpeed]) -> float:
        """Samples/s of ``model`` placed as ``config`` (node -> GPUs) on ``nodes`` (name -> NodeSpeed)."""
        used = {name: g for name, g in config.items() if g > 0}
        if not used:
            return 0.0
        n = sum(used.values())
        spread = len(used) > 1
        types = {nodes[name].gpu_type for name in used}
        base = min(self.samples_per_second(model, t, n, spread) for t in types)
        return base * min(nodes[name].speed for name in used)


def ideal_time(truth: GroundTruth, gpus_per_type: Mapping[str, int], model: str, requirements: tuple[int, ...],
               total_samples: float, n_avg: float) -> float:
    """Themis T_id: the job's run time alone on 1/N of the cluster, N = ``n_avg`` (time-averaged active jobs
    over its life). Its share (GPUs) is capped by its largest requirement; throughput at the share is the
    ground truth at the largest requirement <= share (scaled linearly for a fractional rest), averaged over
    GPU types weighted by their GPU counts (``gpus_per_type``), on the best servers (speed 1.0)."""
    total = sum(gpus_per_type.values())
    share = min(total / max(n_avg, 1.0), float(requirements[-1]))
    fitting = [r for r in requirements if r <= share] or [requirements[0]]
    r = fitting[-1]
    thr = 0.0
    for gpu_type, g in gpus_per_type.items():
        thr += g / total * truth.samples_per_second(model, gpu_type, r, r > 8)
    thr *= share / r
    return total_samples / thr if thr > 0 else math.inf
