"""The estimator-learning bench's section on other ways to use a model's one run on a GPU type.

Where it sits: :mod:`hops_slurm.tools.bench.estimator_learning` keeps, for every point of the stage "one
run on the type at another count", the model's snapshot and the type's calibration as the store held them
then (:class:`hops_slurm.tools.bench.learning_replay.Outcome`); this module carries that one run to the
asked count with rules other than production's (:data:`RULES`, :func:`alternatives`) and turns the answers
into a per-cell table beside the production estimate, and a table of the production error by how many other
models had then run on the type and layout at both counts (:func:`coverage_table`). Every rule reads only
the snapshot (the model's own records and probe) and the calibration: nothing of the point it predicts.

The rules, each from the model's per-GPU rate r0 at its own count N0 nearest the asked N (same scope, as
:mod:`estimator.refine` picks it):

- ``ring``: :mod:`estimator.refine` alone: the communication time T_c0 under which eq. (1) of the model's
  probe gives r0, carried with the ring share (N-1)/N;
- ``n-1``, ``log2``: the same T_c0 carried as if communication grew with N-1 or log2 N (steeper shapes:
  the communication term as the free parameter, fitted to the one run, with another count law);
- ``formula ratio``: r0 times the formula's own N/N0 ratio (eq. 1-5 with the type's bandwidths: the
  measured/formula factor at N0 held at N);
- ``rate held``: r0 itself (the per-GPU rate does not move with the count);
- ``own ratio elsewhere``: r0 times the model's own N/N0 ratio where it ran both counts on another GPU type or
  in the other layout (geometric mean; only the points where it had);
- ``other layout``: not from N0 but from the model's own rate at N itself in the other layout on the type
  (one server vs one GPU per server), times the formula's ratio between the two layouts at N (only the
  points where it had run there).

Pure: plain values in and out.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from estimator.extrapolate import measured_points
from estimator.model import expected_iter_time, per_gpu_theory_throughput, throughput
from estimator.refine import carried_comm_time, ring_share
from estimator.snapshot import Calibration, JobSnapshot
from hops_slurm.tools.bench.learning_family import pct as _pct_of

#: the count laws a communication time fitted at N0 is carried with (count: GPUs in one server, else nodes)
SHAPES: dict[str, Callable[[int], float]] = {
    "ring": ring_share,
    "n-1": lambda n: float(n - 1),
    "log2": lambda n: math.log2(n),
}
#: every rule of the table, in its column order (module docstring)
RULES = (*SHAPES, "formula ratio", "rate held", "own ratio elsewhere", "other layout")
#: the rules that answer only some points (their count is printed beside their error)
PARTIAL = ("own ratio elsewhere", "other layout")
#: the coverage classes of :func:`coverage_table` (the last one: that many or more)
COVERAGE_CLASSES = (0, 1, 2, 3, 4)


class CellLike(Protocol):
    """A configuration up to the nodes (:class:`hops_slurm.tools.bench.learning_replay.Cell`)."""

    @property
    def gpu_type(self) -> str: ...
    @property
    def gpus(self) -> int: ...
    @property
    def spread(self) -> bool: ...
    @property
    def layout(self) -> str: ...


@dataclass(frozen=True)
class CarryPoint:
    """One (model, cell) point of the stage "type": the production estimate and each rule's (samples/s;
    None where the rule does not answer), the measured value and how many other models had run both counts."""

    model: str
    cell: CellLike
    production: float
    answers: dict[str, float | None]
    measured: float
    coverage: int

    def error(self, rule: str | None = None) -> float | None:
        """Relative error of the production estimate (``rule`` None) or of a rule's (None: no answer)."""
        value = self.production if rule is None else self.answers.get(rule)
        return None if value is None else abs(value - self.measured) / self.measured


def _own(snap: JobSnapshot, gpu_type: str, aggregated: bool, count: int) -> tuple[int, float] | None:
    """The model's (count N0, per-GPU rate) nearest ``count`` in the scope, as :mod:`estimator.refine` picks."""
    points = [p for p in measured_points(snap, gpu_type) if p[0] == aggregated and p[1] >= 2 and p[1] != count]
    if not points:
        return None
    _, count0, per_gpu0 = min(points, key=lambda p: (abs(math.log(p[1] / count)), -p[1]))
    return count0, per_gpu0


def _elsewhere(snap: JobSnapshot, gpu_type: str, aggregated: bool, count0: int, count: int) -> float | None:
    """The model's own per-GPU rate(count) / rate(count0) on every other (GPU type, scope) it ran both at
    (geometric mean); None where it ran both nowhere else."""
    tables = ((True, snap.type_aggregated), (False, snap.type_distributed))
    ratios = [math.log(table[(t, count)] / table[(t, count0)]) for scope, table in tables
              for t in sorted({t for t, _ in table}) if (t, scope) != (gpu_type, aggregated)
              and table.get((t, count), 0.0) > 0 and table.get((t, count0), 0.0) > 0]
    return math.exp(statistics.mean(ratios)) if ratios else None


def alternatives(snap: JobSnapshot, calibration: Calibration | None, gpu_type: str, gpus: int,
                 spread: bool) -> dict[str, float | None]:
    """Each rule's samples/s of the model on ``gpus`` GPUs of ``gpu_type`` (one per node if ``spread``), from
    what ``snap`` and ``calibration`` hold (module docstring); None where a rule does not answer."""
    out: dict[str, float | None] = {rule: None for rule in RULES}
    theory = snap.theory.get(gpu_type)
    aggregated = not spread
    nodes = gpus if spread else 1
    own = _own(snap, gpu_type, aggregated, gpus) if gpus >= 2 else None
    if theory is None or own is None:
        return out
    count0, per_gpu0 = own
    tc, data = theory.components, theory.data
    t_c0 = carried_comm_time(tc, data, per_gpu0, count0, count0, aggregated)
    if t_c0 is not None:
        for name, shape in SHAPES.items():
            t_c = t_c0 * shape(gpus) / shape(count0)
            out[name] = gpus * throughput(tc.batch_size, expected_iter_time(tc, data, t_c, gpus=gpus))
    at = 0.0
    if calibration is not None:
        at = per_gpu_theory_throughput(tc, data, gpus=gpus, nodes=nodes, b_link=calibration.b_link,
                                       b_net=calibration.b_net)
        at0 = per_gpu_theory_throughput(tc, data, gpus=count0, nodes=count0 if spread else 1,
                                        b_link=calibration.b_link, b_net=calibration.b_net)
        out["formula ratio"] = gpus * per_gpu0 * at / at0 if at0 > 0 else None
    out["rate held"] = gpus * per_gpu0
    ratio = _elsewhere(snap, gpu_type, aggregated, count0, gpus)
    out["own ratio elsewhere"] = None if ratio is None else gpus * per_gpu0 * ratio
    other = (snap.type_distributed if aggregated else snap.type_aggregated).get((gpu_type, gpus))
    if other is not None and other > 0 and calibration is not None:
        there = per_gpu_theory_throughput(tc, data, gpus=gpus, nodes=1 if spread else gpus,
                                          b_link=calibration.b_link, b_net=calibration.b_net)
        out["other layout"] = gpus * other * at / there if there > 0 else None
    return out


def pct(x: float | None) -> str:
    """A share as the learning tables print it; "–" for none."""
    return "–" if x is None else _pct_of(x)


def _mean(errors: Sequence[float | None]) -> tuple[float | None, int]:
    got = [e for e in errors if e is not None]
    return (statistics.mean(got) if got else None), len(got)


def carries_table(cells: Sequence[CellLike], points: Sequence[CarryPoint], target: float) -> list[str]:
    """Per cell (and the mean over cells): the production error and each rule's, over the cell's points
    (:data:`PARTIAL`: over the points they answered, their count beside it)."""
    head = " | ".join(RULES)
    lines = [f"| GPU type | layout | GPUs | points | production | {head} |",
             "|---|---|---:|---:|---:|" + "---:|" * len(RULES)]
    cols: dict[str | None, list[float]] = {None: [], **{r: [] for r in RULES}}
    for cell in cells:
        pts = [p for p in points if p.cell == cell]
        if not pts:
            lines.append(f"| {cell.gpu_type} | {cell.layout} | {cell.gpus} | 0 | – |" + " – |" * len(RULES))
            continue
        row = []
        for rule in (None, *RULES):
            mean, n = _mean([p.error(rule) for p in pts])
            if mean is not None:
                cols[rule].append(mean)
            mark = " ✗" if rule is None and mean is not None and mean > target else ""
            row.append(f"{pct(mean)}{mark}" + (f" ({n})" if rule in PARTIAL else ""))
        lines.append(f"| {cell.gpu_type} | {cell.layout} | {cell.gpus} | {len(pts)} | " + " | ".join(row) + " |")
    means = [pct(statistics.mean(cols[r])) if cols[r] else "–" for r in (None, *RULES)]
    lines.append(f"| mean over cells | | | {len(points)} | " + " | ".join(means) + " |")
    return lines


def coverage_table(points: Sequence[CarryPoint]) -> list[str]:
    """The production error and the ``ring`` rule's (no other model's data) by how many other models had
    run on the type and layout at both the model's count and the one asked (:data:`COVERAGE_CLASSES`)."""
    lines = ["| other models at both counts | points | production | `estimator.refine` alone (ring) |",
             "|---|---:|---:|---:|"]
    last = COVERAGE_CLASSES[-1]
    for k in COVERAGE_CLASSES:
        pts = [p for p in points if (p.coverage >= k if k == last else p.coverage == k)]
        label = f"{k} or more" if k == last else str(k)
        lines.append(f"| {label} | {len(pts)} | {pct(_mean([p.error() for p in pts])[0])} | "
                     f"{pct(_mean([p.error('ring') for p in pts])[0])} |")
    return lines


def carries_verdict(cells: Sequence[CellLike], points: Sequence[CarryPoint], target: float) -> str:
    """What the table says, from its numbers: the best rule's mean over cells against production's."""
    by_cell = [[p for p in points if p.cell == c] for c in cells]
    by_cell = [pts for pts in by_cell if pts]

    def cell_mean(rule: str | None) -> float:
        return statistics.mean(_mean([p.error(rule) for p in pts])[0] or 0.0 for pts in by_cell)

    production = cell_mean(None)
    whole = [r for r in RULES if all(p.answers.get(r) is not None for p in points)]
    best = min(whole, key=cell_mean) if whole else None
    covered = [p for p in points if p.coverage > 0]
    bare = [p for p in points if p.coverage == 0]
    return (
        f"Mean over cells: production {pct(production)} (target {pct(target)}: "
        f"{'met' if production <= target else 'missed'})"
        + (f"; the best rule that answers every point, `{best}`, {pct(cell_mean(best))}" if best else "")
        + f". Where another model had run both counts ({len(covered)} of {len(points)} points) production gives "
        f"{pct(_mean([p.error() for p in covered])[0])} and `estimator.refine` alone "
        f"{pct(_mean([p.error('ring') for p in covered])[0])}; where none had, production "
        f"{pct(_mean([p.error() for p in bare])[0])} and `estimator.refine` alone "
        f"{pct(_mean([p.error('ring') for p in bare])[0])}.")


__all__ = ["COVERAGE_CLASSES", "PARTIAL", "RULES", "SHAPES", "CarryPoint", "alternatives", "carries_table",
           "carries_verdict", "coverage_table"]
