"""Benchmark ``estimator``: how well eq. (1)-(2) predict multi-GPU throughput on Gavel's measured data.

For each model variant of Gavel's ``simulation_throughputs.json`` (Narayanan et al., OSDI 2020;
bundled in ``hops_slurm/data/gavel`` with its MIT licence) that has multi-GPU figures, we take only
the 1-GPU throughput and a published parameter count, predict the 2/4/8-GPU throughput consolidated
(one server, eq. 2 with B_link) and unconsolidated (across servers, eq. 2 with B_net), and compare
with the measured values. B_link and B_net are fitted per GPU type on half of the variants; errors
are reported on the other half. Writes ``docs/results/estimator.md``.
"""

from __future__ import annotations

import ast
import json
import math
from collections import defaultdict
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from estimator.mixture import Mixture
from estimator.model import TimeComponents, per_gpu_theory_throughput

NAME = "estimator"
GPU_TYPES = ("k80", "p100", "v100")
SCALES = (2, 4, 8)
DATA_FILE = "simulation_throughputs.json"

#: Published parameter counts (not in Gavel's data). Sources:
#: ResNet-18 for CIFAR-10 (Gavel Table 2 cites kuangliu/pytorch-cifar): 11.17 M (He et al., CVPR 2016,
#:   18-layer ResNet with a 10-class head).
#: ResNet-50 on ImageNet: 25.6 M (He et al., CVPR 2016; torchvision's resnet50 has 25,557,032).
#: Transformer (Gavel: jadore801120/attention-is-all-you-need-pytorch on Multi30k): 65 M, the base
#:   model of Vaswani et al., NeurIPS 2017, Table 3. Multi30k's smaller vocabulary makes the real
#:   count lower (about 50 M by the architecture's arithmetic): an acknowledged approximation.
#: LM (Gavel: pytorch/examples word_language_model on WikiText-2): 13.99 M, computed from the example's
#:   default architecture (2-layer LSTM, 200 embedding/hidden units, 33,278-word vocabulary; tied=False).
PARAMS = {
    "ResNet-18": 11.17e6,
    "ResNet-50": 25.6e6,
    "Transformer": 65e6,
    "LM": 13.99e6,
}
#: Backward ≈ 2 × forward (the usual FLOP ratio for dense layers); update and data time are folded
#: into the 1-GPU time (T_u = T_d = 0), no sync wait, pattern 1. Gavel's data has no breakdown.
FORWARD_SHARE = 1.0 / 3.0
B_GRID = np.logspace(4, 13, 2701)  # parameters/s searched for B_link and B_net


@dataclass(frozen=True)
class Variant:
    name: str  # e.g. "ResNet-18 (batch size 16)"
    family: str
    batch: int
    params: float


def _load() -> dict[str, dict[tuple[str, int], float]]:
    path = resources.files("hops_slurm") / "data" / "gavel" / DATA_FILE
    raw = json.loads(path.read_text())
    out: dict[str, dict[tuple[str, int], float]] = {}
    for worker, jobs in raw.items():
        out[worker] = {}
        for key, value in jobs.items():
            name, scale = ast.literal_eval(key)
            out[worker][(name, int(scale))] = float(value["null"])
    return out


def _variants(data: dict[str, dict[tuple[str, int], float]]) -> list[Variant]:
    names = sorted({n for (n, s) in data["v100"] if s > 1})
    variants = []
    for name in names:
        family = name.split(" (")[0]
        batch = int(name.split("batch size ")[1].rstrip(")")) if "batch size" in name else 1
        if family in PARAMS:
            variants.append(Variant(name, family, batch, PARAMS[family]))
    return sorted(variants, key=lambda v: (v.family, v.batch))


def _predict(v: Variant, thr1: float, gpus: int, consolidated: bool, b: float) -> float:
    """Predicted job steps/s (Gavel's unit: steps summed over workers) on ``gpus`` GPUs."""
    tau1 = 1.0 / thr1  # seconds per iteration on one GPU
    tc = TimeComponents(t_f=tau1 * FORWARD_SHARE, t_b=tau1 * (1 - FORWARD_SHARE), t_u=0.0, pattern=1,
                        params=v.params, batch_size=1)  # batch 1: per-GPU iterations/s
    nodes = 1 if consolidated else 2
    per_gpu = per_gpu_theory_throughput(tc, Mixture.constant(0.0), gpus=gpus, nodes=nodes, b_link=b, b_net=b)
    return per_gpu * gpus


def _points(data, variants, gpu_type, consolidated):
    """(variant, gpus, 1-GPU steps/s, measured steps/s) wherever all are present and non-zero."""
    worker = gpu_type if consolidated else f"{gpu_type}_unconsolidated"
    pts = []
    for v in variants:
        thr1 = data[gpu_type].get((v.name, 1), 0.0)
        for n in SCALES:
            meas = data[worker].get((v.name, n), 0.0)
            if thr1 > 0 and meas > 0:
                pts.append((v, n, thr1, meas))
    return pts


def _fit(points, consolidated: bool) -> float:
    """B minimising the mean squared log error of predicted vs measured throughput.

    The grid is evaluated with eq. (1)-(2) written out in numpy (the same closed form as
    :func:`estimator.model.per_gpu_theory_throughput` under this benchmark's assumptions);
    :func:`_check_closed_form` verifies the two agree.
    """
    return float(B_GRID[int(np.argmin(_errors(points, consolidated)))])


def _fit_physical(link_points, net_points) -> tuple[float, float]:
    """(B_link, B_net) minimising both layouts' squared log errors together under B_link >= B_net
    (in-server at least cross-server, :mod:`estimator.calibration`): for each B_link on the grid the
    best B_net not above it."""
    link, net = _errors(link_points, True), _errors(net_points, False)
    best_net = np.minimum.accumulate(net)  # best B_net at or below each grid value
    at = np.array([int(np.argmin(net[: i + 1])) for i in range(len(net))])
    i = int(np.argmin(link + best_net))
    return float(B_GRID[i]), float(B_GRID[at[i]])


def _errors(points, consolidated: bool) -> np.ndarray:
    """Each grid bandwidth's sum of squared log errors over ``points``."""
    if not points:
        raise ValueError("no fitting points")
    params = np.array([v.params for v, _, _, _ in points])
    gpus = np.array([n for _, n, _, _ in points], dtype=float)
    tau1 = 1.0 / np.array([t1 for _, _, t1, _ in points])
    meas = np.array([m for _, _, _, m in points])
    share = (gpus - 1) / gpus if consolidated else np.ones_like(gpus)
    t_c = params[None, :] / B_GRID[:, None] * share[None, :]
    t_f, t_b = tau1 * FORWARD_SHARE, tau1 * (1 - FORWARD_SHARE)
    tau = t_f[None, :] + np.maximum(t_b[None, :] + 0.2 * t_c, t_c)
    pred = gpus[None, :] / tau
    return (np.log(pred / meas[None, :]) ** 2).sum(axis=1)


def _check_closed_form(points, consolidated: bool, b: float) -> None:
    for v, n, t1, _ in points:
        tau1 = 1.0 / t1
        t_c = v.params / b * ((n - 1) / n if consolidated else 1.0)
        closed = n / (tau1 * FORWARD_SHARE + max(tau1 * (1 - FORWARD_SHARE) + 0.2 * t_c, t_c))
        if not math.isclose(closed, _predict(v, t1, n, consolidated, b), rel_tol=1e-9):
            raise AssertionError(f"closed form and estimator.model disagree for {v.name} on {n} GPUs")


def _rel(pred: float, meas: float) -> float:
    return abs(pred - meas) / meas


def _split(variants: list[Variant]) -> tuple[list[Variant], list[Variant]]:
    """Alternate batch sizes within each family: 1st, 3rd, 5th to fitting, the others to testing."""
    by_family: dict[str, list[Variant]] = defaultdict(list)
    for v in variants:
        by_family[v.family].append(v)
    train, test = [], []
    for fam in sorted(by_family):
        for i, v in enumerate(by_family[fam]):
            (train if i % 2 == 0 else test).append(v)
    return train, test


def _evaluate(data, train, test, *, physical: bool = True):
    """Fit B per (type, layout) on ``train`` (``physical``: B_link >= B_net per type, as the estimator's
    calibration keeps it; False: each layout alone, the earlier fit); return fitted B and rows of test
    predictions."""
    fitted: dict[tuple[str, bool], float] = {}
    rows = []
    for gpu_type in GPU_TYPES:
        pair = _fit_physical(_points(data, train, gpu_type, True), _points(data, train, gpu_type, False)) \
            if physical else None
        for consolidated in (True, False):
            pts = _points(data, train, gpu_type, consolidated)
            b = _fit(pts, consolidated) if pair is None else pair[0 if consolidated else 1]
            _check_closed_form(pts, consolidated, b)
            fitted[(gpu_type, consolidated)] = b
            for v, n, t1, m in _points(data, test, gpu_type, consolidated):
                rows.append((v, gpu_type, consolidated, n, t1, m, _predict(v, t1, n, consolidated, b), n * t1))
    return fitted, rows


def _mape(values: list[float]) -> str:
    return f"{100 * float(np.mean(values)):.1f}%" if values else "n/a"


def run(out_dir: Path) -> Path:
    data = _load()
    variants = _variants(data)
    train, test = _split(variants)
    fitted, rows = _evaluate(data, train, test)

    lines = [
        "# Estimator: predicting multi-GPU throughput from one GPU (eq. 1-2)",
        "",
        "Generated by `hops-slurm bench estimator` (`make bench`); source `hops_slurm/bench/estimator.py`.",
        "",
        "## Setup",
        "",
        f"- Data: Gavel's measured throughputs (`hops_slurm/data/gavel/{DATA_FILE}`; Narayanan et al., "
        "\"Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning Workloads\", OSDI 2020, "
        "MIT licence): steps/s of each model variant on k80/p100/v100 at 1/2/4/8 GPUs, consolidated "
        "(one server) and `_unconsolidated` (spread over servers). We read a multi-GPU figure as steps "
        "summed over workers, so per-GPU iteration time = GPUs / figure.",
        "- Inputs to a prediction: the variant's 1-GPU figure on that type, its family's published "
        "parameter count (not in Gavel's data; sources in the module: ResNet-18 11.17 M, ResNet-50 "
        "25.6 M, Transformer 65 M, LSTM LM 13.99 M), and B_link / B_net of the type.",
        "- Model: eq. (1) pattern 1 with T_d = T_u = T_w = 0, T_f : T_b = 1 : 2 of the 1-GPU iteration "
        "time (Gavel gives no breakdown), T~_c = 0.2 T_c; eq. (2) T_c = params/B_link·(N-1)/N "
        "consolidated, params/B_net unconsolidated.",
        f"- Split: the {len(variants)} variants with multi-GPU data, batch sizes alternating within each "
        f"family: fit on {len(train)} ({', '.join(v.name for v in train)}), test on {len(test)}. "
        "B_link and B_net are fitted per GPU type (grid search, least squares on log throughput) on the "
        "fitting half only, together and physical: B_link >= B_net (in-server at least cross-server, as "
        "`estimator/calibration.py` keeps the live and simulated calibrations); the independent fit of "
        "each layout, which may break that, is shown beside it below.",
        "- Baseline for context: linear scaling (N × the 1-GPU figure, i.e. communication is free).",
        "",
        "## Fitted bandwidths (parameters/s; GB/s at 4 bytes per fp32 gradient)",
        "",
        "| GPU type | B_link | B_net |",
        "|---|---|---|",
    ]
    for gpu_type in GPU_TYPES:
        bl, bn = fitted[(gpu_type, True)], fitted[(gpu_type, False)]
        lines.append(f"| {gpu_type} | {bl:.3g} ({bl * 4 / 1e9:.2f} GB/s) | {bn:.3g} ({bn * 4 / 1e9:.2f} GB/s) |")

    lines += ["", "## Error on the held-out half, per model (mean relative error over k80/p100/v100 × 2/4/8 GPUs)", "",
              "| model (batch) | consolidated: model | consolidated: linear "
              "| unconsolidated: model | unconsolidated: linear |",
              "|---|---|---|---|---|"]
    all_err: dict[tuple[bool, str], list[float]] = defaultdict(list)
    for v in test:
        cells = []
        for consolidated in (True, False):
            mine = [r for r in rows if r[0] == v and r[2] == consolidated]
            model_err = [_rel(r[6], r[5]) for r in mine]
            lin_err = [_rel(r[7], r[5]) for r in mine]
            all_err[(consolidated, "model")] += model_err
            all_err[(consolidated, "linear")] += lin_err
            cells += [_mape(model_err), _mape(lin_err)]
        lines.append(f"| {v.name} | " + " | ".join(cells) + " |")
    lines.append("| **all held-out** | " + " | ".join(
        f"**{_mape(all_err[(c, k)])}**" for c in (True, False) for k in ("model", "linear")) + " |")

    lines += ["", "### By GPU count and type (held-out, model): mean relative error (mean signed error)", "",
              "| layout | GPUs | k80 | p100 | v100 |", "|---|---|---|---|---|"]
    for consolidated in (True, False):
        for n in SCALES:
            cells = []
            for t in GPU_TYPES:
                sel = [r for r in rows if r[1] == t and r[2] == consolidated and r[3] == n]
                bias = float(np.mean([(r[6] - r[5]) / r[5] for r in sel])) if sel else 0.0
                cells.append(f"{_mape([_rel(r[6], r[5]) for r in sel])} ({100 * bias:+.0f}%)")
            layout = "consolidated" if consolidated else "unconsolidated"
            lines.append(f"| {layout} | {n} | " + " | ".join(cells) + " |")

    free_fit, free_rows = _evaluate(data, train, test, physical=False)
    lines += ["", "### Physical fit against the independent fit, and the 90% accuracy target", "",
              "Mean relative error per cell, physical fit (independent fit of each layout, which may give "
              "B_link < B_net); cells above 10% miss the issue-22 target of >= 90% accuracy.", "",
              "| layout | GPUs | k80 | p100 | v100 |", "|---|---|---|---|---|"]
    missed = []
    for consolidated in (True, False):
        for n in SCALES:
            cells = []
            for t in GPU_TYPES:
                phys = [_rel(r[6], r[5]) for r in rows if r[1] == t and r[2] == consolidated and r[3] == n]
                free = [_rel(r[6], r[5]) for r in free_rows if r[1] == t and r[2] == consolidated and r[3] == n]
                cells.append(f"{_mape(phys)} ({_mape(free)})")
                if phys and float(np.mean(phys)) > 0.10:
                    missed.append(f"{t} {n} GPUs {'consolidated' if consolidated else 'unconsolidated'}")
            layout = "consolidated" if consolidated else "unconsolidated"
            lines.append(f"| {layout} | {n} | " + " | ".join(cells) + " |")
    lines += ["", "Independent-fit bandwidths: " + ", ".join(
        f"{t} B_link {free_fit[(t, True)]:.3g} / B_net {free_fit[(t, False)]:.3g}" for t in GPU_TYPES) + ".",
              "", f"Cells missing the target ({len(missed)} of {len(SCALES) * 2 * len(GPU_TYPES)}): "
              + ("; ".join(missed) if missed else "none") + ". Why: see \"Where the model's assumptions break\"."]

    # A stricter check: leave one whole family out (fit on the other three).
    lines += ["", "### Leave-one-family-out (fit on the other three families, all batch sizes)", "",
              "| held-out family | consolidated: model | unconsolidated: model |", "|---|---|---|"]
    for fam in sorted({v.family for v in variants}):
        tr = [v for v in variants if v.family != fam]
        te = [v for v in variants if v.family == fam]
        _, fam_rows = _evaluate(data, tr, te)
        lines.append(f"| {fam} | " + " | ".join(
            _mape([_rel(r[6], r[5]) for r in fam_rows if r[2] == c]) for c in (True, False)) + " |")

    superlinear = [r for r in rows if r[5] > r[7] * 1.0001]
    # Measured job throughput that drops when GPUs are added (same variant, type, layout).
    drops = []
    for v in variants:
        for t in GPU_TYPES:
            for c in (True, False):
                worker = t if c else f"{t}_unconsolidated"
                seq = [(n, data[worker].get((v.name, n), 0.0)) for n in SCALES]
                seq = [(n, m) for n, m in seq if m > 0]
                drops += [(v.name, t, c, a, b) for (a, ma), (b, mb) in zip(seq, seq[1:]) if mb < ma]
    r50 = [r for r in rows if r[0].family == "ResNet-50" and r[2] and r[3] == 8]
    r50_eff = float(np.mean([r[5] / r[7] for r in r50])) if r50 else float("nan")
    lines += [
        "",
        "## Where the model's assumptions break",
        "",
        f"- Super-linear measurements: {len(superlinear)} of {len(rows)} held-out points are faster per GPU "
        "than the 1-GPU run (e.g. ResNet-18 at 8 consolidated V100s: 340 steps/s against 8 × 29.9). "
        "Eq. (1)-(2) only add time to an iteration, so these are under-predicted whatever the bandwidths.",
        f"- Non-monotone measurements: in {len(drops)} (variant, type, layout) sequences over all variants the "
        "measured job throughput falls when GPUs are added (e.g. "
        + ", ".join(f"{n} on {t} {'cons' if c else 'uncons'} {a}→{b} GPUs" for n, t, c, a, b in drops[:3])
        + "). Eq. (2) makes time grow monotonically with N, so no bandwidth fits these points.",
        f"- Shared per-server bottlenecks: held-out ResNet-50 (ImageNet) reaches only {100 * r50_eff:.0f}% of "
        "linear scaling at 8 consolidated GPUs although its gradient volume is modest; a per-server "
        "resource that all GPUs share (CPU decoding, PCIe) would explain it. Eq. (1) models T_d per "
        "process and has no contention term, so the model over-predicts (positive signed error above).",
        "- One bandwidth per type for every model and no latency term in eq. (2) (§3.5: \"considering only "
        "network bandwidth\"): per-model deviations in effective bandwidth show up as error.",
        "- Unconsolidated placements in Gavel's data span an unknown number of servers; eq. (2) makes "
        "cross-node communication independent of the GPU count, while the error grows with it (table above).",
        "- The T_f : T_b split and T_d = 0 are assumptions forced by the data (no breakdown); the "
        "profiler measures these components for real jobs.",
        "- Parameter counts are published per family, not read from Gavel's exact code (see Transformer above).",
        "",
        "## Held-out detail (steps/s)",
        "",
        "| model (batch) | type | layout | GPUs | 1-GPU | measured | predicted | linear | error |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for v, t, c, n, t1, m, p, lin in rows:
        lines.append(f"| {v.name} | {t} | {'cons' if c else 'uncons'} | {n} | {t1:.2f} | {m:.2f} | {p:.2f} | "
                     f"{lin:.2f} | {100 * _rel(p, m):.1f}% |")
    lines += [
        "",
        "## Prediction check: 2-process gloo DDP",
        "",
        "filled by the profiler benchmark: it measures a real 2-process gloo DDP run against the "
        "estimator's prediction and writes its section to `docs/results/profiler.md`.",
        "",
    ]
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "estimator.md"
    path.write_text("\n".join(lines))
    return path
