"""The learning bench's bound on count laws: the most any law of the communication term carries of one run.

Where it sits: a section of ``hops-slurm bench estimator-learning``
(:mod:`hops_slurm.tools.bench.estimator_learning` writes it after the other carries,
:mod:`hops_slurm.tools.bench.learning_carries`). It reads Gavel's table alone (no replay, no calibration):
every multi-GPU model, every cell (GPU type, layout, count N) and every other multi-GPU count N0 of the same
type and layout, the model's own per-GPU rate at N0 carried to N as :mod:`estimator.refine` does (the
communication time T_c0 under which eq. (1) of the model's probe gives the N0 rate), with the
communication growing as (s(N)/s(N0))^alpha, s(N) = (N-1)/N the ring share (alpha = 1: ``estimator.refine``).

Three exponents per cell, and one factor (:func:`law_bound`):

- ``ring``: alpha = 1, production's rule;
- ``type's law``: alpha learned from the type's other models in the same layout (every other model known,
  the model under test left out): the median over each other model and pair of counts a < b of
  ln(T_c(b)/T_c(a)) / ln(s(b)/s(a)), within [0, :data:`ALPHA_MAX`] (from communication that does not grow
  with the count to communication that grows with N-1);
- ``best for the cell``: the one exponent of :data:`EXPONENTS` with the least mean error on the cell's own
  answers. That one is fitted to what it is scored on, so it is no rule: it bounds every rule that carries
  the model's one run with a law of its communication term shared by the cell. Where even it is over the
  target, no such law reaches the target from the cell's own numbers;
- ``type's residual``: the ring share's carry times the median over the type's other models (every other
  model known) of their measured rate at N over their own ring carry from N0: a per-count correction of
  the type shared by its models (what a GPU type's topology, e.g. an NVLink mesh, does to every job alike),
  where :mod:`estimator.peers` weighs the other models by how near their efficiency is to the model's.

The carries read no bandwidth calibration, so a held-out calibration gives the same numbers. Pure: plain
values in and out.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from estimator.model import expected_iter_time, throughput
from estimator.refine import carried_comm_time, ring_share
from estimator.snapshot import TypeTheory
from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.tools.bench.learning_family import per_gpu_rate, probed_theory
from hops_slurm.tools.bench.learning_replay import COUNTS, Cell, multi_gpu_models

#: the steepest law: communication growing with N-1 (from 2 to 8 members 7 times; the ring share's 1.75)
ALPHA_MAX = math.log(7.0) / math.log(ring_share(8) / ring_share(2))
#: the exponents the cell's best law is chosen among (0 to ALPHA_MAX by 0.05)
EXPONENTS = tuple(k / 20 for k in range(int(ALPHA_MAX * 20) + 1))


@dataclass(frozen=True)
class LawBound:
    """One cell's mean errors (fractions) and the exponents behind them."""

    cell: Cell
    points: int
    ring: float
    learned: float
    learned_alpha: float  # the median over the models of the exponent each was carried with
    best: float
    best_alpha: float
    residual: float  # the ring carry times the type's median residual (module docstring)


def comm_time(theory: TypeTheory, per_gpu: float, count: int, aggregated: bool) -> float | None:
    """T_c (s) under which eq. (1) of ``theory`` gives ``per_gpu`` at ``count`` (GPUs in one server, else nodes)."""
    return carried_comm_time(theory.components, theory.data, per_gpu, count, count, aggregated)


def carried(theory: TypeTheory, per_gpu0: float, count0: int, count: int, aggregated: bool,
            alpha: float) -> float | None:
    """Per-GPU rate at ``count`` carried from ``per_gpu0`` at ``count0`` with T_c growing as s^alpha."""
    t_c0 = comm_time(theory, per_gpu0, count0, aggregated)
    if t_c0 is None:
        return None
    t_c = t_c0 * (ring_share(count) / ring_share(count0)) ** alpha
    # one GPU per node across servers (the bench's spread layout): the GPUs are the nodes there
    return throughput(theory.components.batch_size, expected_iter_time(theory.components, theory.data, t_c,
                                                                        gpus=count))


def pair_exponents(truth: GroundTruth, model: str, gpu_type: str, spread: bool) -> list[float]:
    """Each pair of multi-GPU counts a < b of ``model`` on the type and layout: ln(T_c(b)/T_c(a)) / ln(s(b)/s(a))
    (pairs where either point shows no communication cost say nothing)."""
    theory = probed_theory(truth, model, gpu_type)
    times = {c: comm_time(theory, per_gpu_rate(truth, model, gpu_type, c, spread), c, not spread)
             for c in COUNTS[1:]}
    known = sorted(c for c, t in times.items() if t)
    return [math.log(times[b] / times[a]) / math.log(ring_share(b) / ring_share(a))  # type: ignore[operator]
            for i, a in enumerate(known) for b in known[i + 1:]]


def law_bound(truth: GroundTruth, cell: Cell) -> LawBound:
    """The cell's mean error over every model and N0 with each rule of the module docstring."""
    models = multi_gpu_models(truth)
    pairs = {m: pair_exponents(truth, m, cell.gpu_type, cell.spread) for m in models}
    cases: list[tuple[str, TypeTheory, float, int, float, float]] = []  # model, theory, N0 rate, N0, measured, law
    alphas = []
    for model in models:
        others = [a for m, got in pairs.items() if m != model for a in got]
        alpha = min(max(statistics.median(others), 0.0), ALPHA_MAX) if others else 1.0
        alphas.append(alpha)
        theory = probed_theory(truth, model, cell.gpu_type)
        measured = per_gpu_rate(truth, model, cell.gpu_type, cell.gpus, cell.spread)
        for n0 in COUNTS[1:]:
            if n0 != cell.gpus:
                rate0 = per_gpu_rate(truth, model, cell.gpu_type, n0, cell.spread)
                cases.append((model, theory, rate0, n0, measured, alpha))

    def carry(case: tuple[str, TypeTheory, float, int, float, float], alpha: float) -> float:
        _, theory, rate0, n0, _, _ = case
        got = carried(theory, rate0, n0, cell.gpus, not cell.spread, alpha)
        return rate0 if got is None else got  # no progress at N0: the rate held

    def mean_error(alpha: float | None) -> float:  # None: each model's learned law
        return statistics.mean(abs(carry(c, c[5] if alpha is None else alpha) - c[4]) / c[4] for c in cases)

    residual = {(c[0], c[3]): c[4] / carry(c, 1.0) for c in cases}  # (model, N0): measured over its ring carry
    corrected = []
    for case in cases:
        others = [v for (m, n0), v in residual.items() if m != case[0] and n0 == case[3]]
        corrected.append(abs(carry(case, 1.0) * statistics.median(others) - case[4]) / case[4])
    best, best_alpha = min((mean_error(a), a) for a in EXPONENTS)
    return LawBound(cell, len(cases), mean_error(1.0), mean_error(None), statistics.median(alphas), best, best_alpha,
                    statistics.mean(corrected))


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def law_bound_table(bounds: Sequence[LawBound], target: float) -> list[str]:
    """Per cell: the ring share, the type's learned law and the cell's best law; ✗ where even that misses."""
    lines = ["| GPU type | layout | GPUs | points | ring share (`estimator.refine`) | the type's law from the other "
             "models (exponent) | best law for the cell (exponent) | ring times the type's residual |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for b in bounds:
        mark = " ✗" if b.best > target else ""
        lines.append(f"| {b.cell.gpu_type} | {b.cell.layout} | {b.cell.gpus} | {b.points} | {_pct(b.ring)} | "
                     f"{_pct(b.learned)} ({b.learned_alpha:.2f}) | {_pct(b.best)} ({b.best_alpha:.2f}){mark} | "
                     f"{_pct(b.residual)} |")
    mean = statistics.mean
    lines.append(f"| mean over cells | | | {sum(b.points for b in bounds)} | {_pct(mean(b.ring for b in bounds))} | "
                 f"{_pct(mean(b.learned for b in bounds))} | {_pct(mean(b.best for b in bounds))} | "
                 f"{_pct(mean(b.residual for b in bounds))} |")
    return lines


def law_bound_verdict(bounds: Sequence[LawBound], target: float,
                      production: Mapping[Cell, float | None] | None = None) -> str:
    """One paragraph: the three means and the cells no count law brings under ``target``; with
    ``production`` (each cell's mean error after one run on the type in the replay), production's mean over
    the cells some law brings under it and over the others (:func:`production_split`)."""
    mean = statistics.mean
    ring, learned, best, residual = (mean(getattr(b, k) for b in bounds) for k in ("ring", "learned", "best", "residual"))
    out = [f"{b.cell.gpu_type} {b.cell.layout} {b.cell.gpus} GPUs {_pct(b.best)}" for b in bounds if b.best > target]
    return (f"Mean over cells: the ring share {_pct(ring)}, the type's law learned from its other models "
            f"{_pct(learned)}, the best law for each cell {_pct(best)} (target {_pct(target)}: "
            f"{'met' if best <= target else 'missed'} even so); the ring share's carry times the type's median "
            f"residual {_pct(residual)}. Cells that no law of the communication term "
            f"carrying the model's one run brings under the target, from their own numbers: "
            f"{', '.join(out) if out else 'none'}." + production_split(bounds, target, production))


def production_split(bounds: Sequence[LawBound], target: float,
                     production: Mapping[Cell, float | None] | None) -> str:
    """Production's error after one run on the type, as a mean over cells, on the cells where the cell's
    best law reaches ``target`` (what the issue's target can ask of a carry of one run) and on the others
    (those a carry of one run cannot bring there, from their own numbers); empty without ``production``."""
    if not production:
        return ""
    reach = [production[b.cell] for b in bounds if b.best <= target and production.get(b.cell) is not None]
    beyond = [production[b.cell] for b in bounds if b.best > target and production.get(b.cell) is not None]
    if not reach:
        return ""
    mean = statistics.mean(reach)
    tail = f"; on the {len(beyond)} others {_pct(statistics.mean(beyond))}" if beyond else ""
    return (f" Production after one run on the type (the replay above), as a mean over the {len(reach)} cells whose "
            f"best law reaches the target: {_pct(mean)} (target {_pct(target)}: "
            f"{'met' if mean <= target else 'missed'}){tail}.")


def law_bound_section(truth: GroundTruth, cells: Sequence[Cell], target: float,
                      production: Mapping[Cell, float | None] | None = None) -> list[str]:
    """The table and its verdict (module docstring); ``production``: :func:`law_bound_verdict`'s."""
    bounds = [law_bound(truth, c) for c in cells]
    return [*law_bound_table(bounds, target), "", law_bound_verdict(bounds, target, production)]


__all__ = ["ALPHA_MAX", "EXPONENTS", "LawBound", "carried", "comm_time", "law_bound", "law_bound_section",
           "law_bound_table", "law_bound_verdict", "pair_exponents", "production_split"]
