"""Benchmark ``honesty`` (issue 16): does understating a job's samples pay, with the defences off and on?

Data flow: a workload (``paper`` on paper-512, ``gavel`` on paper-64) -> a share of its users (10 %,
30 %: the first users in name order) declare ``samples=`` divided by 10 or 100 (liars) or multiplied
by 10 (overstaters) -> :func:`hops_slurm.sim.runner.simulate` with the Hops policy, the defences of
:mod:`estimator.honesty` off and on -> per group (the changed users, the honest ones) avg JCT and max
LR beside the same jobs in the workload where everyone is honest -> ``docs/results/honesty.md``.

LR here is wait / the job's *true* eq. 9 age (the age the all-honest run gave the same job), so a
liar's LR is not flattered by its own small declaration. "Gain" is how much lower the changed users'
avg JCT is than the same users' avg JCT in the all-honest workload (positive: lying paid).

Each run's numbers are kept as JSON under ``docs/results/honesty/`` and the table is assembled from
every run done so far, so the grid can be run in parts: ``HOPS_BENCH_HONESTY=paper-512`` (or
``gavel-64``) runs one workload, ``HOPS_BENCH_HONESTY_RUNS=honest,liars-10-100-on`` only those
scenarios; ``HOPS_BENCH_SEED`` (default 0). Runs not done are listed as not run.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Mapping
from dataclasses import astuple, dataclass, replace
from pathlib import Path

from estimator.honesty import HonestyParams
from hops_slurm.errors import HopsError
from hops_slurm.records import JobRecord
from hops_slurm.sim.cluster_spec import load_cluster
from hops_slurm.sim.runner import Options, RunResult, simulate
from hops_slurm.sim.workload import JobSpec, load_workload
from hops_slurm.tools import results_header

NAME = "honesty"
IN_ALL = False  # tens of minutes on paper-512: run by name
#: the environment variables this benchmark reads (they precede the command in its results header)
ENV = ("HOPS_BENCH_HONESTY", "HOPS_BENCH_HONESTY_RUNS", "HOPS_BENCH_SEED")


def command(env: Mapping[str, str]) -> str:
    """The command that reruns this benchmark as it runs under ``env`` (its results header)."""
    return results_header.bench_command(NAME, ENV, env)


#: tag -> (cluster, workload spec)
WORKLOADS = {"paper-512": ("paper-512", "paper"), "gavel-64": ("paper-64", "gavel")}
TARGET = 0.05


@dataclass(frozen=True)
class Scenario:
    tag: str
    share: float  # of the users
    factor: float  # declared = true / factor (liars, factor > 1) or true * (1 / factor) (overstaters: < 1)
    defences: bool

    @property
    def what(self) -> str:
        if self.share == 0:
            return "nobody lies"
        kind = f"understate {self.factor:g}x" if self.factor > 1 else f"overstate {1 / self.factor:g}x"
        return f"{self.share:.0%} of users {kind}"


SCENARIOS = [Scenario("honest", 0.0, 1.0, False)] + [
    Scenario(f"liars-{int(share * 100)}-{int(factor)}-{'on' if on else 'off'}", share, factor, on)
    for share in (0.1, 0.3) for factor in (10.0, 100.0) for on in (False, True)
] + [Scenario(f"over-30-10-{'on' if on else 'off'}", 0.3, 0.1, on) for on in (False, True)]


def changed_users(jobs: tuple[JobSpec, ...], share: float) -> set[str]:
    users = sorted({j.user for j in jobs})
    return set(users[:math.ceil(share * len(users) - 1e-9)]) if share > 0 else set()


def declare(jobs: tuple[JobSpec, ...], users: set[str], factor: float) -> tuple[JobSpec, ...]:
    """The same jobs; those of ``users`` declare their true samples / ``factor``."""
    return tuple(replace(j, declared_samples=j.total_samples / factor) if j.user in users else j for j in jobs)


@dataclass(frozen=True)
class Row:
    """What the table needs of one job (kept as JSON per run)."""

    job_id: str
    user: str
    jct: float | None  # None: unfinished
    wait: float | None
    age: float | None  # the eq. 9 age the scheduler made before it first ran
    declared: float | None = None  # samples it declared (runs kept before these were recorded: None)
    processed: float | None = None  # samples the scheduler's estimate says it processed (engine's estimate)

    @classmethod
    def of(cls, rec: JobRecord) -> Row:
        if rec.end is None:
            return cls(rec.job_id, rec.user, None, None, rec.age_estimate, rec.total_samples, rec.processed_samples)
        busy = sum((p.end if p.end is not None else rec.end) - p.start for p in rec.placements)
        return cls(rec.job_id, rec.user, rec.end - rec.submit, max(rec.end - rec.submit - busy, 0.0), rec.age_estimate,
                   rec.total_samples, rec.processed_samples)


def flagged(rows: list[Row], users: set[str], tolerance: float) -> str:
    """Honest jobs (not of ``users``) whose estimated processed samples passed ``1 + tolerance`` times their
    declaration (their owner's history would be penalised), of the honest jobs that ran; the largest ratio."""
    ratios = [r.processed / r.declared for r in rows
              if r.user not in users and r.declared and r.processed is not None]
    if not ratios:
        return "-"
    over = sum(1 for x in ratios if x > 1.0 + tolerance)
    return f"{over}/{len(ratios)} (max {max(ratios):.3f})"


def group_stats(rows: list[Row], users: set[str], true_age: dict[str, float]) -> dict[str, dict[str, float]]:
    """avg JCT and max LR (wait / true age) of the changed users' jobs and of the others'."""
    out = {}
    for name, keep in (("changed", lambda r: r.user in users), ("honest", lambda r: r.user not in users)):
        done = [r for r in rows if keep(r) and r.jct is not None]
        if not done:
            continue
        jct = [r.jct for r in done if r.jct is not None]
        lr = [r.wait / true_age[r.job_id] for r in done if r.wait is not None and true_age.get(r.job_id)]
        out[name] = {"jobs": len(done), "avg_jct": sum(jct) / len(jct), "max_lr": max(lr) if lr else math.nan,
                     "unfinished": sum(1 for r in rows if keep(r) and r.jct is None)}
    return out


def _rows(got: dict[str, object]) -> list[Row]:
    return [Row(*r) for r in got["rows"]]  # type: ignore[attr-defined]


def run_one(tag: str, sc: Scenario, seed: int, data: Path) -> dict[str, object]:
    cluster_name, spec = WORKLOADS[tag]
    cluster = load_cluster(cluster_name)
    jobs = load_workload(spec, seed, cluster_gpus=cluster.total_gpus)
    users = changed_users(jobs, sc.share)
    start = time.perf_counter()
    result: RunResult = simulate(cluster, declare(jobs, users, sc.factor), "hops", seed,
                                 Options(honesty=HonestyParams(enabled=sc.defences)))
    out = {"scenario": sc.tag, "what": sc.what, "defences": sc.defences, "users": sorted(users), "seed": seed,
           "wall_seconds": time.perf_counter() - start,
           "rows": [list(astuple(Row.of(r))) for r in result.jobs]}
    folder = data / tag
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{sc.tag}.json").write_text(json.dumps(out))
    return out


def _load(data: Path, tag: str, sc: Scenario) -> dict[str, object] | None:
    path = data / tag / f"{sc.tag}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def _h(seconds: float) -> str:
    return f"{seconds / 3600:.2f}h"


def _pct(x: float) -> str:
    return f"{x:+.1%}"


def table(data: Path, tag: str) -> list[str]:
    cluster_name, spec = WORKLOADS[tag]
    base = _load(data, tag, SCENARIOS[0])
    lines = [f"## Workload `{spec}` on `{cluster_name}`", ""]
    if base is None:
        return lines + ["Not run (the all-honest run, which every row compares with, is missing).", ""]
    base_recs = _rows(base)
    true_age = {r.job_id: r.age for r in base_recs if r.age}
    tol = HonestyParams().tolerance
    lines += ["| scenario | defences | changed users | their avg JCT (honest run) | gain | their max LR | "
              "honest avg JCT (Δ) | honest max LR (Δ) | honest jobs flagged | targets | wall |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    all_h = group_stats(base_recs, set(), true_age)["honest"]
    lines.append(f"| nobody lies | - | - | - | - | - | {_h(all_h['avg_jct'])} | {all_h['max_lr']:.2f} | "
                 f"{flagged(base_recs, set(), tol)} | - | {base['wall_seconds']:.0f} s |")
    missing = []
    for sc in SCENARIOS[1:]:
        got = _load(data, tag, sc)
        if got is None:
            missing.append(sc.tag)
            continue
        users = set(got["users"])  # type: ignore[arg-type]
        recs = _rows(got)
        now = group_stats(recs, users, true_age)
        was = group_stats(base_recs, users, true_age)
        ch, hn, ch0, hn0 = now["changed"], now["honest"], was["changed"], was["honest"]
        gain = 1 - ch["avg_jct"] / ch0["avg_jct"]
        d_jct = hn["avg_jct"] / hn0["avg_jct"] - 1
        d_lr = hn["max_lr"] / hn0["max_lr"] - 1
        if sc.factor > 1:
            ok = gain <= TARGET and d_jct <= TARGET and d_lr <= TARGET
            verdict = ("met" if ok else "missed") if sc.defences else "(defences off)"
        else:
            verdict = "no gain" if gain <= TARGET else "gained"
        unf = ch["unfinished"] + hn["unfinished"]
        lines.append(
            f"| {sc.what} | {'on' if sc.defences else 'off'} | {', '.join(sorted(users))} ({ch['jobs']:.0f} jobs) | "
            f"{_h(ch['avg_jct'])} ({_h(ch0['avg_jct'])}) | {_pct(gain)} | {ch['max_lr']:.2f} | "
            f"{_h(hn['avg_jct'])} ({_pct(d_jct)}) | {hn['max_lr']:.2f} ({_pct(d_lr)}) | {flagged(recs, users, tol)} | {verdict}"
            f"{f'; {unf:.0f} unfinished' if unf else ''} | {got['wall_seconds']:.0f} s |")
    if missing:
        lines += ["", f"Not run: {', '.join(missing)}."]
    return lines + [""]


def run(out_dir: Path) -> Path:
    data = out_dir / "honesty"
    seed = int(os.environ.get("HOPS_BENCH_SEED", "0"))
    tags = [t for t in os.environ.get("HOPS_BENCH_HONESTY", ",".join(WORKLOADS)).split(",") if t]
    wanted = [s for s in os.environ.get("HOPS_BENCH_HONESTY_RUNS", ",".join(s.tag for s in SCENARIOS)).split(",") if s]
    bad = sorted(set(tags) - set(WORKLOADS)) + sorted(set(wanted) - {s.tag for s in SCENARIOS})
    if bad:
        raise HopsError(f"honesty bench: unknown workload or scenario {', '.join(bad)}; workloads "
                        f"{', '.join(WORKLOADS)}, scenarios {', '.join(s.tag for s in SCENARIOS)}")
    for tag in tags:
        for sc in SCENARIOS:
            if sc.tag in wanted:
                run_one(tag, sc, seed, data)
    return write_report(out_dir, seed)


def write_report(out_dir: Path, seed: int) -> Path:
    """``honesty.md`` from every run kept under ``out_dir/honesty`` (runs nothing)."""
    data = out_dir / "honesty"
    out_dir.mkdir(parents=True, exist_ok=True)
    p = HonestyParams()
    lines = [
        "# Honest declarations pay (issue 16)",
        "",
        "Written by `hops-slurm bench honesty` (runs in parts: see `hops_slurm/tools/bench/honesty_bench.py`). Hops policy, "
        f"seed {seed}. A share of the users (the first in name order) declare their jobs' samples divided by "
        "10 or 100 (or multiplied by 10); everything else about the jobs is the same as in the all-honest "
        "workload. *Gain*: how much lower those users' avg JCT is than the same users' avg JCT when everyone "
        "is honest (positive: lying paid). LR = wait / the job's true eq. 9 age. Δ: honest users against "
        "the same users in the all-honest workload. Targets (defences on): gain ≤ 5 %, honest Δ avg JCT and "
        "Δ max LR ≤ 5 %. Defences (estimator/honesty.py, defaults): re-age a job past (1 + "
        f"{p.tolerance:g}) x its declaration for (1 + {p.headroom:g}) x what it did; a user's next jobs are "
        f"aged x their worst processed/declared ratio of the last {p.history_jobs} jobs (ratios ≤ "
        f"{1 + p.tolerance:g} count as 1, cap {p.history_cap:g}).",
        "",
        "*Honest jobs flagged*: jobs of honest users whose processed samples, as the scheduler estimates them from "
        "their runtime records (the live engine's estimate, hops_slurm/core/processed.py), passed (1 + "
        f"{p.tolerance:g}) x their declaration, of those that ran, and the largest processed/declared ratio.",
        "",
        "One seed, one run per cell: max LR is one job's value and moves with any change of the schedule, so "
        "its Δ is the noisiest column. *Wall* is the run's wall time on the machine that ran it (a shared, "
        "loaded 2-core machine for the committed table).",
        "",
    ]
    for tag in WORKLOADS:
        lines += table(data, tag)
    path = out_dir / "honesty.md"
    return results_header.write(path, "\n".join(lines) + "\n", generator=f"{__name__}:run",
                                 command=command(os.environ))
