"""Benchmark ``estimator``: how well eq. (1)-(2) predict multi-GPU throughput on Gavel's measured data.

For each model variant of Gavel's ``simulation_throughputs.json`` (Narayanan et al., OSDI 2020;
bundled in ``hops_slurm/data/gavel`` with its MIT licence) that has multi-GPU figures, we take only
the 1-GPU throughput and a published parameter count, predict the 2/4/8-GPU throughput consolidated
(one server, eq. 2 with B_link) and unconsolidated (across servers, eq. 2 with B_net), and compare
with the measured values. The per-type constants are fitted on half of the variants
(:mod:`hops_slurm.tools.bench.estimator_fit`: the paper's eq. 1-5, and the same with the two terms
:mod:`estimator.model` adds); errors are reported on the other half. Writes ``docs/results/estimator.md``.
"""

from __future__ import annotations

import ast
import json
import os
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path

import numpy as np

from hops_slurm.tools.bench.estimator_fit import TypeFit, check_closed_form, fit_extended, fit_paper, predict
from hops_slurm.tools import results_header

NAME = "estimator"
#: the environment variables this benchmark reads (they precede the command in its results header)
ENV = ()


def command(env: Mapping[str, str]) -> str:
    """The command that reruns this benchmark as it runs under ``env`` (its results header)."""
    return results_header.bench_command(NAME, ENV, env)


GPU_TYPES = ("k80", "p100", "v100")
SCALES = (2, 4, 8)
DATA_FILE = "simulation_throughputs.json"
TARGET = 0.10  # issue 22: >= 90% accuracy, i.e. mean relative error <= 10% per GPU type, count and layout

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
FORMS = ("extended", "paper")


@dataclass(frozen=True)
class Variant:
    name: str  # e.g. "ResNet-18 (batch size 16)"
    family: str
    batch: int
    params: float


@dataclass(frozen=True)
class Row:
    """One held-out measurement and the predictions of both forms."""

    variant: Variant
    gpu_type: str
    consolidated: bool
    gpus: int
    thr1: float
    measured: float
    extended: float
    paper: float

    @property
    def linear(self) -> float:
        return self.gpus * self.thr1

    def err(self, form: str) -> float:
        return _rel(getattr(self, form), self.measured)

    def signed(self, form: str) -> float:
        return (getattr(self, form) - self.measured) / self.measured

    def floor(self) -> float:
        """The least error of any prediction that does not beat communication-free scaling (eq. 1-2 only
        add time): nonzero only for a super-linear measurement."""
        return max(0.0, (self.measured - self.linear) / self.measured)


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


def _fit_points(points):
    return [(v.params, n, t1, m) for v, n, t1, m in points]


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


def _fits(data, train, *, physical: bool = True) -> dict[str, dict[str, TypeFit]]:
    """Per form and GPU type, the constants fitted on ``train`` only (physical: as the estimator's
    calibration keeps them; ``physical=False``: the paper form with each layout fitted alone)."""
    out: dict[str, dict[str, TypeFit]] = {form: {} for form in FORMS}
    for gpu_type in GPU_TYPES:
        link = _fit_points(_points(data, train, gpu_type, True))
        net = _fit_points(_points(data, train, gpu_type, False))
        out["paper"][gpu_type] = fit_paper(link, net, physical=physical)
        out["extended"][gpu_type] = fit_extended(link, net) if physical else out["paper"][gpu_type]
        for form in FORMS:
            for consolidated, pts in ((True, link), (False, net)):
                check_closed_form(pts, consolidated, out[form][gpu_type])
    return out


def _evaluate(data, train, test, *, physical: bool = True) -> tuple[dict[str, dict[str, TypeFit]], list[Row]]:
    """Fit on ``train``; rows of ``test`` predictions by both forms."""
    fits = _fits(data, train, physical=physical)
    rows = []
    for gpu_type in GPU_TYPES:
        for consolidated in (True, False):
            for v, n, t1, m in _points(data, test, gpu_type, consolidated):
                rows.append(Row(v, gpu_type, consolidated, n, t1, m,
                                predict(v.params, t1, n, consolidated, fits["extended"][gpu_type]),
                                predict(v.params, t1, n, consolidated, fits["paper"][gpu_type])))
    return fits, rows


def _ablation(data, train, test) -> list[tuple[str, list[float]]]:
    """Held-out relative errors of the extended form with only one of its two terms."""
    out = []
    for label, latency, straggler in (("latency only", True, False), ("straggler only", False, True)):
        errs = []
        for gpu_type in GPU_TYPES:
            fit = fit_extended(_fit_points(_points(data, train, gpu_type, True)),
                               _fit_points(_points(data, train, gpu_type, False)), latency=latency, straggler=straggler)
            for c in (True, False):
                errs += [_rel(predict(v.params, t1, n, c, fit), m) for v, n, t1, m in _points(data, test, gpu_type, c)]
        out.append((label, errs))
    return out


def _per_count(data, train, test, fits) -> dict[tuple[str, int], float]:
    """Diagnostic, not the model: held-out MRE per consolidated cell when B_link alone is refitted per GPU
    count on the fitting half (the other extended constants kept, B_link >= B_net)."""
    from hops_slurm.tools.bench.estimator_fit import B_GRID, _log_errors

    out = {}
    for gpu_type in GPU_TYPES:
        fit = fits["extended"][gpu_type]
        for n in SCALES:
            pts = [p for p in _fit_points(_points(data, train, gpu_type, True)) if p[1] == n]
            errors = _log_errors(pts, True, B_GRID, fit.latency_link, fit.straggler)
            ok = B_GRID >= fit.b_net
            per = replace(fit, b_link=float(B_GRID[ok][int(np.argmin(errors[ok]))]))
            out[(gpu_type, n)] = float(np.mean([_rel(predict(v.params, t1, n, True, per), m)
                                                for v, k, t1, m in _points(data, test, gpu_type, True) if k == n]))
    return out


def _mape(values: list[float]) -> str:
    return f"{100 * float(np.mean(values)):.1f}%" if values else "n/a"


def _cell(rows: list[Row], gpu_type: str, consolidated: bool, gpus: int) -> list[Row]:
    return [r for r in rows if r.gpu_type == gpu_type and r.consolidated == consolidated and r.gpus == gpus]


def _layout(consolidated: bool) -> str:
    return "consolidated" if consolidated else "unconsolidated"


def _drops(data, variants) -> list[tuple[str, str, bool, int, int]]:
    """(variant, type, layout, a, b): measured job throughput falls from a to b GPUs."""
    out = []
    for v in variants:
        for t in GPU_TYPES:
            for c in (True, False):
                worker = t if c else f"{t}_unconsolidated"
                seq = [(n, data[worker].get((v.name, n), 0.0)) for n in SCALES]
                seq = [(n, m) for n, m in seq if m > 0]
                out += [(v.name, t, c, a, b) for (a, ma), (b, mb) in zip(seq, seq[1:]) if mb < ma]
    return out


def _why(cell: list[Row], drops) -> str:
    """Why a cell misses the target, from its own rows: the super-linear floor, non-monotone points,
    and the worst point with its sign."""
    parts = []
    floor = float(np.mean([r.floor() for r in cell]))
    supers = sorted((r for r in cell if r.floor() > 0), key=lambda r: -r.floor())
    if supers:
        parts.append(f"{len(supers)} of {len(cell)} points super-linear (floor {100 * floor:.1f}% for any model "
                     f"that only adds time, e.g. {supers[0].variant.name} at {supers[0].measured / supers[0].linear:.2f}x "
                     "linear)")
    r0 = cell[0]
    dips = {d[0] for d in drops if d[1] == r0.gpu_type and d[2] == r0.consolidated and r0.gpus in (d[3], d[4])}
    dips &= {r.variant.name for r in cell}
    if dips:
        parts.append(f"{len(dips)} held-out variant(s) whose throughput falls when GPUs are added around {r0.gpus} "
                     "GPUs (no monotone model fits both sides)")
    worst = max(cell, key=lambda r: r.err("extended"))
    parts.append(f"worst {worst.variant.name} {100 * worst.signed('extended'):+.0f}% "
                 f"(measured {worst.measured:.2f}, predicted {worst.extended:.2f})")
    bias = float(np.mean([r.signed("extended") for r in cell]))
    parts.append(f"mean signed error {100 * bias:+.0f}%")
    return "; ".join(parts)


def run(out_dir: Path) -> Path:
    data = _load()
    variants = _variants(data)
    train, test = _split(variants)
    fits, rows = _evaluate(data, train, test)
    drops = _drops(data, variants)

    lines = [
        "# Estimator: predicting multi-GPU throughput from one GPU (eq. 1-2)",
        "",
        "Generated by `hops-slurm bench estimator` (`make bench`); source `hops_slurm/tools/bench/estimator.py` "
        "(fits: `hops_slurm/tools/bench/estimator_fit.py`).",
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
        "25.6 M, Transformer 65 M, LSTM LM 13.99 M), and the type's fitted constants.",
        "- Profile stand-in: eq. (1) pattern 1 with T_d = T_u = 0, T_f : T_b = 1 : 2 of the 1-GPU iteration "
        "time (Gavel gives no breakdown), T~_c = 0.2 T_c.",
        "- Two model forms, both through `estimator.model.per_gpu_theory_throughput` (the estimator's code):",
        "  - **paper**: eq. (1)-(5) as printed; eq. (2) T_c = params/B_link·(N-1)/N in one server, "
        "params/B_net across servers; per type B_link, B_net.",
        "  - **extended** (the estimator's model, `estimator/model.py`): the same plus a per-step latency in "
        "eq. (2) (T_c += latency·(N-1), in-server and cross-server values) and the straggler wait T_w = "
        "straggler·(T_f+T_b+T_u)·E[max of N standard normals]; per type B_link, B_net, two latencies, one "
        "straggler spread. Why these two: \"What eq. 1-2 miss\" below.",
        f"- Split: the {len(variants)} variants with multi-GPU data, batch sizes alternating within each "
        f"family: fit on {len(train)} ({', '.join(v.name for v in train)}), test on {len(test)}. "
        "Every constant is fitted per GPU type on the fitting half only (least squares on log throughput), "
        "physical as `estimator/calibration.py` keeps the live calibration: B_link >= B_net, in-server "
        "latency <= cross-server latency, each bandwidth within the range the fitting half's points imply "
        "one by one (`estimator.calibration.implied_bandwidth`). No constant is fitted per GPU count, per "
        "layout alone or per model.",
        "- Baseline for context: linear scaling (N × the 1-GPU figure, i.e. communication is free).",
        "",
        "## Fitted constants per GPU type (fitting half)",
        "",
        "| GPU type | form | B_link (params/s) | B_net (params/s) | latency in-server (ms/step) "
        "| latency cross-server (ms/step) | straggler spread |",
        "|---|---|---|---|---|---|---|",
    ]
    for gpu_type in GPU_TYPES:
        for form in FORMS:
            f = fits[form][gpu_type]
            lines.append(f"| {gpu_type} | {form} | {f.b_link:.3g} ({f.b_link * 4 / 1e9:.2f} GB/s) | "
                         f"{f.b_net:.3g} ({f.b_net * 4 / 1e9:.2f} GB/s) | {1e3 * f.latency_link:.2f} | "
                         f"{1e3 * f.latency_net:.2f} | {f.straggler:.3f} |")
    lines += ["", "GB/s at 4 bytes per fp32 gradient. Every fit is physical: "
              + ("yes" if all(fits[form][t].physical() for form in FORMS for t in GPU_TYPES) else "**no**") + "."]

    lines += ["", "## Accuracy per GPU type, count and layout (held-out half): the issue-22 target", "",
              f"Mean relative error per cell, extended form (paper form before it, arrow); target <= "
              f"{100 * TARGET:.0f}% (>= 90% accuracy). In brackets: the floor that the cell's super-linear "
              "measurements put under any model that only adds time to an iteration.", "",
              "| layout | GPUs | k80 | p100 | v100 |", "|---|---|---|---|---|"]
    missed = []
    for consolidated in (True, False):
        for n in SCALES:
            cells = []
            for t in GPU_TYPES:
                cell = _cell(rows, t, consolidated, n)
                ext = float(np.mean([r.err("extended") for r in cell]))
                mark = "" if ext <= TARGET else " ✗"
                cells.append(f"{_mape([r.err('paper') for r in cell])} → **{_mape([r.err('extended') for r in cell])}**"
                             f"{mark} ({_mape([r.floor() for r in cell])})")
                if ext > TARGET:
                    missed.append((t, consolidated, n, cell))
            lines.append(f"| {_layout(consolidated)} | {n} | " + " | ".join(cells) + " |")
    by_form = {form: _mape([r.err(form) for r in rows]) for form in FORMS}
    lines += ["", f"All held-out points: paper {by_form['paper']} → extended {by_form['extended']} "
              f"(linear scaling {_mape([_rel(r.linear, r.measured) for r in rows])}). "
              f"Cells meeting the target: {18 - len(missed)} of {len(SCALES) * 2 * len(GPU_TYPES)}.", "",
              f"### Cells missing the target ({len(missed)}), with the reason from their own points", ""]
    for t, c, n, cell in missed:
        lines.append(f"- {t} {n} GPUs {_layout(c)} ({_mape([r.err('extended') for r in cell])}): {_why(cell, drops)}.")

    lines += ["", "### Mean signed error per cell (extended): positive = optimistic, negative = pessimistic", "",
              "| layout | GPUs | k80 | p100 | v100 |", "|---|---|---|---|---|"]
    for consolidated in (True, False):
        for n in SCALES:
            cells = [f"{100 * float(np.mean([r.signed('extended') for r in _cell(rows, t, consolidated, n)])):+.0f}%"
                     for t in GPU_TYPES]
            lines.append(f"| {_layout(consolidated)} | {n} | " + " | ".join(cells) + " |")
    pess = [r for r in rows if r.extended < 0.5 * r.measured]
    pess_paper = [r for r in rows if r.paper < 0.5 * r.measured]
    lines += ["", f"Held-out points estimated below half their measured throughput (the kind of pessimistic "
              f"estimate that locked issue 22's jobs out of a faster type): paper {len(pess_paper)}, "
              f"extended {len(pess)} of {len(rows)}"
              + (": " + ", ".join(f"{r.variant.name} {r.gpu_type} {r.gpus} {'cons' if r.consolidated else 'uncons'}"
                                  for r in pess) if pess else "") + "."]

    lines += ["", "## Error on the held-out half, per model (mean relative error over k80/p100/v100 × 2/4/8 GPUs)", "",
              "| model (batch) | consolidated: extended | paper | linear "
              "| unconsolidated: extended | paper | linear |",
              "|---|---|---|---|---|---|---|"]
    for v in test:
        cells = []
        for consolidated in (True, False):
            mine = [r for r in rows if r.variant == v and r.consolidated == consolidated]
            cells += [_mape([r.err("extended") for r in mine]), _mape([r.err("paper") for r in mine]),
                      _mape([_rel(r.linear, r.measured) for r in mine])]
        lines.append(f"| {v.name} | " + " | ".join(cells) + " |")

    free_fits, free_rows = _evaluate(data, train, test, physical=False)
    lines += ["", "### The paper form fitted per layout alone (may give B_link < B_net)", "",
              "Mean relative error per cell of the paper form fitted without the physical constraint, for "
              "comparison with the physical paper fit above: "
              + "; ".join(f"{t} {n} {'cons' if c else 'uncons'} "
                          f"{_mape([r.err('paper') for r in _cell(free_rows, t, c, n)])}"
                          for c in (True, False) for n in SCALES for t in GPU_TYPES)
              + ". Bandwidths: " + ", ".join(f"{t} B_link {free_fits['paper'][t].b_link:.3g} / B_net "
                                             f"{free_fits['paper'][t].b_net:.3g}" for t in GPU_TYPES) + "."]

    lines += ["", "### Leave-one-family-out (fit on the other three families, all batch sizes)", "",
              "| held-out family | consolidated: extended | paper | unconsolidated: extended | paper |",
              "|---|---|---|---|---|"]
    for fam in sorted({v.family for v in variants}):
        _, fam_rows = _evaluate(data, [v for v in variants if v.family != fam], [v for v in variants if v.family == fam])
        lines.append(f"| {fam} | " + " | ".join(
            _mape([r.err(form) for r in fam_rows if r.consolidated == c]) for c in (True, False) for form in FORMS)
            + " |")

    superlinear = [r for r in rows if r.floor() > 0]
    r50 = [r for r in rows if r.variant.family == "ResNet-50" and r.consolidated and r.gpus == 8]
    r50_eff = float(np.mean([r.measured / r.linear for r in r50])) if r50 else float("nan")
    v100_c4 = [r for r in rows if r.gpu_type == "v100" and r.consolidated and r.gpus == 4]
    lines += [
        "",
        "## What eq. 1-2 miss, and the two terms added",
        "",
        "- **Cross-server communication grows with the GPU count.** Eq. (2) makes T_c = params/B_net for "
        "any N across servers, yet every unconsolidated sequence in the data loses per-GPU throughput from "
        "2 to 4 to 8 GPUs (e.g. LM on V100: 22%, 12%, 10% of linear). A ring all-reduce over N processes "
        "takes N-1 steps per phase, each with a start-up cost the paper leaves out (\"we approximate it by "
        "considering only network bandwidth\", §3.5). Added: T_c += latency·(N-1), one latency in-server and "
        "one across servers per type (in-server no slower).",
        "- **Per-GPU compute slows as processes are added, in proportion to the compute.** In-sample, per "
        "cell, the extra time per iteration over one GPU regresses on the 1-GPU time as well as on the "
        "parameter count; eq. (1) has no such term beside T_w, which the paper names (\"synchronization "
        "waiting time caused by speed differences between processes\") but predicts only from measured "
        "waits, i.e. not for a GPU count never run. N synchronous processes wait each iteration for the "
        "slowest: with a per-process spread sigma the expected wait is sigma·E[max of N standard normals] "
        "(0.56, 1.03, 1.42 for 2, 4, 8). Added: T_w = straggler·(T_f+T_b+T_u)·E[max of N], one spread per "
        "type.",
        "- Each term alone (fitted the same way, the other held at 0), all held-out points: "
        + ", ".join(f"{label} {_mape(errs)}" for label, errs in _ablation(data, train, test)) + ".",
        "- Both terms are zero in the estimator unless calibrated, so without them the estimator computes "
        "eq. (1)-(5) exactly as printed.",
        "",
        "## Where the model's assumptions still break",
        "",
        f"- Super-linear measurements: {len(superlinear)} of {len(rows)} held-out points are faster per GPU "
        "than the 1-GPU run (e.g. ResNet-18 at 2 consolidated V100s: 1.57x linear). Eq. (1)-(2) only add "
        "time to an iteration, so these are under-predicted whatever the constants; the bracketed floors "
        "above are what they alone cost.",
        f"- Non-monotone measurements: in {len(drops)} (variant, type, layout) sequences over all variants the "
        "measured job throughput falls when GPUs are added (e.g. "
        + ", ".join(f"{n} on {t} {'cons' if c else 'uncons'} {a}→{b} GPUs" for n, t, c, a, b in drops[:3])
        + "). On V100 in one server every model dips at 4 GPUs and recovers at 8 (held-out 4-GPU points at "
        f"{100 * float(np.mean([r.measured / r.linear for r in v100_c4])):.0f}% of linear on average): a "
        "topology or measurement effect of that server (4 GPUs of an NVLink hybrid cube-mesh have fewer "
        "rings than 8), not a property of the models; a constant per GPU count would follow it, and is what "
        "this bench does not fit (one set of constants per type). As a diagnostic only: B_link refitted per "
        "GPU count on the fitting half gives consolidated "
        + ", ".join(f"{t} {n} {100 * v:.1f}%" for (t, n), v in _per_count(data, train, test, fits).items())
        + ", so even that would leave the V100 cells above the target: the spread between models of one "
        "cell (e.g. ResNet-18 at 2 V100s: 1.57x linear at batch 32, 0.67x at batch 128) is not a per-type "
        "or per-count quantity.",
        f"- Shared per-server bottlenecks: held-out ResNet-50 (ImageNet) reaches only {100 * r50_eff:.0f}% of "
        "linear scaling at 8 consolidated GPUs although its gradient volume is modest; a per-server "
        "resource all GPUs share (CPU decoding, PCIe) would explain it; eq. (1) models T_d per process.",
        "- One set of constants per type for every model: per-model deviations in effective bandwidth "
        "(bucketing, sparse embeddings) show up as error; parameter counts are published per family, not "
        "read from Gavel's exact code.",
        "- Unconsolidated placements in Gavel's data span an unknown number of servers.",
        "- The T_f : T_b split and T_d = 0 are assumptions forced by the data (no breakdown); the "
        "profiler measures these components for real jobs.",
        "- What the scheduler does about the remaining error: a config once run is measured (type and entity "
        "layers replace the model), exploration tries an unmeasured config whose optimistic bound beats the "
        "measured one (`planner/explore.py`), and the bandwidths are refitted from runtime records "
        "(`estimator.calibration.refit`).",
        "",
        "## Held-out detail (steps/s)",
        "",
        "| model (batch) | type | layout | GPUs | 1-GPU | measured | extended | paper | linear | error ext. | error paper |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r.variant.name} | {r.gpu_type} | {'cons' if r.consolidated else 'uncons'} | {r.gpus} | "
                     f"{r.thr1:.2f} | {r.measured:.2f} | {r.extended:.2f} | {r.paper:.2f} | {r.linear:.2f} | "
                     f"{100 * r.err('extended'):.1f}% | {100 * r.err('paper'):.1f}% |")
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
    return results_header.write(path, "\n".join(lines), generator=f"{__name__}:run",
                                 command=command(os.environ))
