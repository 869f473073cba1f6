"""Sia's measured profiles of one application on one GPU type -> how many optimizer steps a job needs and
how long one step takes on a given number of GPUs.

Data flow: ``<profiles>/<application>/`` of Sia's artifact (``placements-<type>.csv``,
``scalability-<type>.csv``, ``validation-<batch size>.csv``; docs/traces.md describes each) ->
:func:`load_application` -> :func:`steps_to_complete` and :func:`seconds_per_step`, which
:mod:`hops_slurm.sim.traces.sia` turns into a job's samples on this project's ground truth.

The model these files come with (Pollux's and Sia's goodput model, as docs/traces.md reads it): a job's
progress is counted in steps at the application's smallest validated batch size; at batch size ``B`` a
step makes ``gain = (var + sqr) / (var / scale + sqr)`` of progress (``scale`` = B / the smallest batch
size, ``sqr`` and ``var`` the gradient statistics of the current epoch, interpolated between validated
batch sizes). A job ends after the application's epoch count. At a fixed batch size (a rigid job) the
steps it needs are therefore fixed, and only the time per step depends on where it runs.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from hops_slurm.errors import HopsError
from hops_slurm.sim.traces.rows import RowErrors, number, read_rows
from hops_slurm.text import printable

#: epochs each of Sia's applications trains for (the artifact's application table); others: the
#: fewest epochs any of its validation files has
EPOCHS = {"bert": 2, "cifar10": 100, "ncf": 10, "imagenet": 90, "deepspeech2": 80, "yolov3": 50}
#: Sia's calibration against its real cluster: simulated steps are this many times slower (its SLOWDOWNS)
SLOWDOWN = {"cifar10": 1.8, "imagenet": 1.2, "yolov3": 1.2, "bert": 1.2, "deepspeech2": 1.2, "ncf": 1.5}
#: an application's name (a folder name in the profiles directory)
APP_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
MAX_PROFILE_ROWS = 100_000
MAX_VALIDATION_FILES = 64


@dataclass(frozen=True)
class Epoch:
    progress: float  # progress (steps at the smallest batch size) when this epoch ends
    grad_sqr: float
    grad_var: float


@dataclass(frozen=True)
class Application:
    name: str
    gpu_type: str  # Sia's name of the GPU type (the file suffix): aws, rtx, dgx-ext, ...
    #: placement (GPUs per node, e.g. "44") -> [(local batch size, step seconds, sync seconds)] sorted
    placements: dict[str, list[tuple[float, float, float]]]
    #: (nodes, GPUs) -> [(local batch size, step seconds, sync seconds)] sorted (scalability + placements)
    by_shape: dict[tuple[int, int], list[tuple[float, float, float]]]
    validation: dict[int, list[Epoch]]  # batch size -> its epochs
    epochs: int

    @property
    def init_batch(self) -> int:
        return min(self.validation)

    @property
    def max_batch(self) -> int:
        return max(self.validation)


def _placement_id(text: str) -> str:
    if not text.isdigit() or not 0 < len(text) <= 64 or "0" in text:
        raise ValueError(f"placement must be digits 1-9, one per node, got {printable(text, 40)!r}")
    return min(text[i:] + text[:i] for i in range(len(text)))


def load_application(folder: Path, gpu_type: str) -> Application:
    """One application's profiles for ``gpu_type`` (Sia's suffix); every bad row named in one error."""
    name = folder.name
    if not APP_NAME.fullmatch(name):
        raise HopsError(f"application {printable(name, 64)!r}: not a valid name")
    if not folder.is_dir():
        raise HopsError(f"no profiles for application {name!r}: {printable(folder)} is not a directory")
    placements: dict[str, list[tuple[float, float, float]]] = {}
    by_shape: dict[tuple[int, int], list[tuple[float, float, float]]] = {}
    path = folder / f"placements-{gpu_type}.csv"
    errors = RowErrors(path)
    for lineno, row in read_rows(path, "profile", ("placement", "local_bsz", "step_time", "sync_time"),
                                 max_rows=MAX_PROFILE_ROWS, errors=errors):
        try:
            pid = _placement_id(row.get("placement", ""))
            point = (number(row, "local_bsz", low=1, high=1e7), number(row, "step_time", low=1e-9, high=1e6),
                     number(row, "sync_time", high=1e6))
        except ValueError as exc:
            errors.add(lineno, str(exc))
            continue
        placements.setdefault(pid, []).append(point)
        by_shape.setdefault((len(pid), sum(map(int, pid))), []).append(point)
    errors.raise_if_any()
    path = folder / f"scalability-{gpu_type}.csv"
    errors = RowErrors(path)
    for lineno, row in read_rows(path, "profile", ("num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time"),
                                 max_rows=MAX_PROFILE_ROWS, errors=errors):
        try:
            shape = (int(number(row, "num_nodes", low=1, high=10_000, integer=True)),
                     int(number(row, "num_replicas", low=1, high=100_000, integer=True)))
            point = (number(row, "local_bsz", low=1, high=1e7), number(row, "step_time", low=1e-9, high=1e6),
                     number(row, "sync_time", high=1e6))
        except ValueError as exc:
            errors.add(lineno, str(exc))
            continue
        if shape not in by_shape or all(p[0] != point[0] for p in by_shape[shape]):
            by_shape.setdefault(shape, []).append(point)
    errors.raise_if_any()
    validation = _validation(folder)
    epochs = EPOCHS.get(name, min(len(v) for v in validation.values()))
    short = [b for b, v in validation.items() if len(v) < epochs]
    if short:
        raise HopsError(f"application {name!r}: validation-{short[0]}.csv has fewer than {epochs} epochs")
    if not placements and not by_shape:
        raise HopsError(f"application {name!r}: no profile rows for GPU type {gpu_type!r}")
    return Application(name, gpu_type, {k: sorted(v) for k, v in placements.items()},
                       {k: sorted(v) for k, v in by_shape.items()}, validation, epochs)


def _validation(folder: Path) -> dict[int, list[Epoch]]:
    files = sorted(folder.glob("validation-*.csv"))
    if not files:
        raise HopsError(f"application {folder.name!r}: no validation-<batch size>.csv in {printable(folder)}")
    if len(files) > MAX_VALIDATION_FILES:
        raise HopsError(f"application {folder.name!r}: more than {MAX_VALIDATION_FILES} validation files")
    out: dict[int, list[Epoch]] = {}
    for path in files:
        size = path.stem.removeprefix("validation-")
        if not size.isdigit() or not 0 < int(size) <= 10_000_000:
            raise HopsError(f"{printable(path)}: the name must be validation-<batch size>.csv")
        errors = RowErrors(path)
        epochs = []
        for lineno, row in read_rows(path, "validation profile", ("progress", "grad_sqr", "grad_var"), max_rows=100_000,
                                     errors=errors):
            try:
                epochs.append(Epoch(number(row, "progress", high=1e15), number(row, "grad_sqr", low=0, high=1e30),
                                    number(row, "grad_var", low=0, high=1e30)))
            except ValueError as exc:
                errors.add(lineno, str(exc))
        errors.raise_if_any()
        if not epochs or any(b.progress < a.progress for a, b in zip(epochs, epochs[1:])):
            raise HopsError(f"{printable(path)}: progress must grow from one epoch to the next")
        out[int(size)] = epochs
    return out


def _between(app: Application, batch: float, epoch: int) -> tuple[float, float]:
    """Gradient (sqr, var) of ``epoch`` at batch size ``batch``, linear between validated batch sizes."""
    sizes = sorted(app.validation)
    lo = max(s for s in sizes if s <= batch)
    hi = min(s for s in sizes if s >= batch)
    a, b = app.validation[lo][epoch], app.validation[hi][epoch]
    if lo == hi:
        return a.grad_sqr, a.grad_var
    w = (batch - lo) / (hi - lo)
    return a.grad_sqr + w * (b.grad_sqr - a.grad_sqr), a.grad_var + w * (b.grad_var - a.grad_var)


def steps_to_complete(app: Application, batch: float) -> float:
    """Optimizer steps at batch size ``batch`` to train ``app.epochs`` epochs (module docstring)."""
    if not app.init_batch <= batch <= app.max_batch:
        raise ValueError(f"batch_size {batch:g} is outside {app.name}'s validated batch sizes "
                         f"{app.init_batch}-{app.max_batch}")
    scale = batch / app.init_batch
    steps, before = 0.0, 0.0
    for e in range(app.epochs):
        end = min(v[e].progress for v in app.validation.values())
        sqr, var = _between(app, batch, e)
        gain = (var + sqr) / (var / scale + sqr) if var / scale + sqr > 0 else 1.0
        steps += max(end - before, 0.0) / max(gain, 1e-9)
        before = max(before, end)
    return steps


def _interp(points: list[tuple[float, float, float]], x: float) -> tuple[float, float]:
    """(step, sync) at local batch size ``x``: linear between measured sizes, the nearest end outside them."""
    if x <= points[0][0]:
        return points[0][1], points[0][2]
    if x >= points[-1][0]:
        return points[-1][1], points[-1][2]
    for (x0, s0, y0), (x1, s1, y1) in zip(points, points[1:]):
        if x0 <= x <= x1:
            w = 0.0 if x1 == x0 else (x - x0) / (x1 - x0)
            return s0 + w * (s1 - s0), y0 + w * (y1 - y0)
    return points[-1][1], points[-1][2]


def _step_sync(app: Application, pid: str, gpus: int, local: float) -> tuple[float, float] | None:
    if pid in app.placements:
        return _interp(app.placements[pid], local)
    nodes = min(len(pid), 16)
    if (nodes, gpus) in app.by_shape:
        return _interp(app.by_shape[(nodes, gpus)], local)
    same = sorted(g for n, g in app.by_shape if n == nodes)
    lower, upper = [g for g in same if g < gpus], [g for g in same if g > gpus]
    if not lower or not upper:
        return None
    g0, g1 = lower[-1], upper[0]
    (s0, y0), (s1, y1) = _interp(app.by_shape[(nodes, g0)], local), _interp(app.by_shape[(nodes, g1)], local)
    w = (gpus - g0) / (g1 - g0)
    return s0 + w * (s1 - s0), y0 + w * (y1 - y0)


def packed(gpus: int, per_node: int) -> str:
    """Sia's placement of a rigid job: whole nodes, then the rest on one more ("882" for 18 on 8-GPU nodes)."""
    full, rest = divmod(gpus, per_node)
    parts = [per_node] * full + ([rest] if rest else [])
    text = "".join(str(min(p, 9)) for p in parts)
    return min(text[i:] + text[:i] for i in range(len(text)))


def seconds_per_step(app: Application, gpus: int, per_node: int, batch: float) -> float | None:
    """Seconds of one optimizer step at batch size ``batch`` on ``gpus`` GPUs packed on nodes of ``per_node``
    (gradient accumulation where a GPU cannot hold its share), times Sia's calibration slowdown; None
    where the profiles say nothing about that many GPUs."""
    pid = packed(gpus, per_node)
    local = math.ceil(batch / gpus - 1e-8)
    if pid in app.placements:
        most = max(p[0] for p in app.placements[pid])
    else:
        wider = [p[0] for (n, g), pts in app.by_shape.items() if n >= len(pid) and g >= gpus for p in pts]
        most = max(wider) if wider else max(p[0] for pts in app.by_shape.values() for p in pts)
    accum = math.ceil(local / most - 1e-8) - 1
    if gpus == 1 and batch > app.init_batch:
        accum = max(1, accum)
    atomic = math.ceil(local / (accum + 1) - 1e-8)
    atomic = max(1, min(atomic, int(app.max_batch / (gpus * (accum + 1)))))
    got = _step_sync(app, pid, gpus, atomic)
    if got is None:
        return None
    step, sync = got
    return (step + accum * max(step - sync, 0.0)) * SLOWDOWN.get(app.name, 1.0)
