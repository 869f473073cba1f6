"""Benchmark ``table4-targets``: issue 37's five Table 4 targets, one row per planner setting, on today's code.

Data flow: :func:`hops_slurm.sim.runner.compare` on ``paper-512`` with the ``paper`` workload (Table 4's
setup), fast path: ``hops`` with today's defaults, each setting of :data:`SETTINGS` on top of them, and sia-lr
of the same seeds -> ``docs/results/table4-targets.md``. No per-run records are kept (``hops-slurm simulate``
with the row's policy name reruns any one of them).

Why: the targets pull against each other, and issue 37 asks for the ablation. This bench puts every rule on
one commit and one table, each cell marked against its target per seed: today's defaults with the band the
planner's own noise gives them (:data:`NOISE`), each rule the defaults turn on turned off alone
(:data:`RULES_OFF`), each rule off by default turned on alone (:data:`RULES_ON`). Targets (issue 37), per
seed: avg JCT <= 0.75x sia-lr's, avg wait <= 0.5x sia-lr's, Max.LR <= 2.0, Avg.frag <= 0.5, preemptions per
job <= 1.0.

The engine path (issue 37 asks for both): the same table again through the production engine on a simulated
slurmctld (:func:`hops_slurm.sim.engine_run.simulate_engine`, what ``hops-slurm simulate --engine`` runs; its
per-job log lines left out by :func:`hops_slurm.tools.bench.engine_sim.quiet_engine`), with sia-lr's
engine-path runs as the base; by default for today's defaults and the noise rows (the band on that path too).

``HOPS_BENCH_SEEDS`` (default ``0,1``), ``HOPS_BENCH_WORKERS`` (simulations at once, default 1),
``HOPS_BENCH_SETTINGS`` (``;``-separated Hops policy names, e.g. ``hops;hops:preempt_penalty=0.5``, in place
of :data:`SETTINGS`; each row is labelled by its policy name), ``HOPS_BENCH_ENGINE`` (which rows also run on
the engine path: ``noise``, the default, ``first``, ``all`` or ``none``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from hops_slurm.errors import HopsError
from hops_slurm.sim.cluster_spec import load_cluster
from hops_slurm.sim.runner import Comparison, RunResult, compare
from hops_slurm.tools import results_header
from hops_slurm.tools.bench.engine_sim import quiet_engine
from hops_slurm.tools.bench.paper_tables import bench_workers
from planner.changes import Change

NAME = "table4-targets"
#: the environment variables this benchmark reads (they precede the command in its results header)
ENV = ("HOPS_BENCH_SEEDS", "HOPS_BENCH_WORKERS", "HOPS_BENCH_SETTINGS", "HOPS_BENCH_ENGINE")
ENGINE_ROWS = ("noise", "first", "all", "none")
CLUSTER, WORKLOAD, BASELINE = "paper-512", "paper", "sia-lr"

def _noise(us: int) -> str:
    """Hops's policy name with the planner's waits read ``us`` (1-9) microseconds longer (``wait_offset``)."""
    return f"hops:wait_offset=0.00000{us}"


#: today's defaults, then the same planner with waits a few microseconds longer: the band a seed's figures
#: move in by which of near-equal plans the solver returns
NOISE: tuple[tuple[str, str], ...] = (
    ("today's defaults", "hops"),
    *((f"waits read {us} µs longer", _noise(us)) for us in (1, 2, 3)),
)

#: each rule today's defaults turn on, turned off alone (docs/design.md, "Planner parameters")
RULES_OFF: tuple[tuple[str, str], ...] = (
    ("moves unpriced (eq. 11 as printed)", "hops:restart_penalty=0"),
    ("no minimum run time", "hops:min_run_time=0"),
    ("equivalent placements not pinned", "hops:pin_running=false"),
    ("no sensitivity adjustment (§3.6)", "hops:sensitivity_adjustment=false"),
    ("no backfill behind the window", "hops:backfill=false"),
    ("no fragment swaps", "hops:fragment_swaps=false"),
    ("swaps displace the lowest worth", "hops:swap_narrow=false"),
    ("swaps displace any job, however long it waits after", "hops:swap_back=0"),
    ("spans Slurm would split otherwise not handled", "hops:split_spans=false"),
    ("no growth into fragments", "hops:fragment_growth=0"),
    ("latency-ratio weights (no stretch)", "hops:stretch_weights=false"),
    ("no remaining-work weight", "hops:remaining_weight=0"),
    ("no growth discount", "hops:growth_discount=0"),
    ("no exploration", "hops:explore=false"),
    ("no explore moves of running jobs", "hops:explore_moves=false"),
    ("no spanning explore moves", "hops:explore_spanning=false"),
    ("spanning explore moves on the optimistic bound", "hops:explore_estimate=false"),
    ("no head reservation", "hops:head_reservation=false"),
    ("a requeued job may take its GPUs back", "hops:no_take_back=false"),
)

#: each rule off by default, turned on alone, at the value its session measured it with
RULES_ON: tuple[tuple[str, str], ...] = (
    ("a preemption price", "hops:preempt_penalty=0.5"),
    ("a longer minimum run time after each preemption", "hops:min_run_growth=1.25"),
    ("young jobs not moved (settling)", "hops:settle_time=720"),
    ("a move toll per earlier preemption", "hops:move_toll=1"),
    ("a requeue toll per earlier preemption", "hops:requeue_toll=0.5"),
    ("no quick move back to a type left", "hops:return_time=3600"),
    ("young jobs not moved onto GPUs freed for them", "hops:young_moves=720"),
    ("a move's smallest gain", "hops:move_gain=1.25"),
    ("requeues priced", "hops:requeue_price=4"),
    ("fragment type affinity", "hops:fragment_affinity=0.7"),
    ("a fragment plan's span limit", "hops:fragment_span_limit=1"),
    ("swaps shortest-remaining first", "hops:swap_shorter=1"),
    ("swaps displace the job back soonest", "hops:swap_soonest=true"),
    ("swaps move the displaced job to idle GPUs", "hops:fragment_moves=true"),
    ("fills whatever the weights", "hops:fragment_fill=true"),
    ("gain per GPU", "hops:gpu_efficiency=1"),
    ("shorter running jobs kept", "hops:keep_shorter=1"),
    ("moves into idle GPUs unpriced", "hops:idle_moves=true"),
    ("explore bound scaled by measured scaling", "hops:explore_scaling=true"),
    ("an explore floor", "hops:explore_floor=1"),
    ("explore moves only to start a waiting job", "hops:explore_room=true"),
    ("explore moves only to new types", "hops:explore_types_once=true"),
    ("late running jobs kept placed", "hops:protect_after=1.75"),
    ("the head started by preemption (the default before session 28)", "hops:head_override=true"),
    ("the defaults before issue 37 (docs/design.md, \"The defaults\")",
     "hops:restart_penalty=0.4,preempt_penalty=1.5,stretch_weights=false,remaining_weight=0,head_reservation=false,"
     "reserve_after=1,reserve_bound=0,explore_estimate=false,split_spans=false,fragment_swaps=false,"
     "swap_narrow=false,swap_back=0,fragment_growth=0,growth_discount=0"),
)

#: (title, what its rows are, rows): the tables of the report, in order
GROUPS: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = (
    ("The planner's own noise",
     "Today's defaults, and the same planner reading every job's wait 1, 2 or 3 µs longer (`wait_offset`, a "
     "measurement device): the solver returns one of near-equal plans, and a microsecond decides which. The "
     "band these four rows span is how far a seed's figures move by that alone; a rule below whose figures "
     "stay inside it has not been shown to move them.", NOISE),
    ("Each of today's rules turned off",
     "Today's defaults with one rule turned off: what each rule the defaults turn on does to the targets.",
     RULES_OFF),
    ("Each rule off by default, turned on",
     "Today's defaults with one rule that is off by default turned on, at the value it was measured with; the "
     "last row turns back every setting issue 37 changed.", RULES_ON),
)

#: every row of the report, in order: (what the row changes, policy name)
SETTINGS: tuple[tuple[str, str], ...] = tuple(row for _, _, rows in GROUPS for row in rows)


@dataclass(frozen=True)
class Target:
    """One of issue 37's targets: its column, how a run's value is read, and its bound (met when <=)."""

    column: str
    value: Callable[[RunResult, RunResult], float]  # (the Hops run, sia-lr's run of the same seed)
    bound: float
    digits: int


TARGETS: tuple[Target, ...] = (
    Target("avg JCT x sia-lr's (<= 0.75)", lambda r, b: r.metrics.avg_jct / b.metrics.avg_jct, 0.75, 3),
    Target("avg wait x sia-lr's (<= 0.5)", lambda r, b: r.metrics.avg_wait / b.metrics.avg_wait, 0.5, 3),
    Target("Max.LR (<= 2.0)", lambda r, b: r.metrics.max_lr, 2.0, 3),
    Target("Avg.frag (<= 0.5)", lambda r, b: r.metrics.avg_frag, 0.5, 3),
    Target("preemptions per job (<= 1.0)", lambda r, b: r.metrics.preemptions / max(1, r.metrics.jobs), 1.0, 2),
)


def command(env: Mapping[str, str]) -> str:
    """The command that reruns this benchmark as it runs under ``env`` (its results header)."""
    return results_header.bench_command(NAME, ENV, env)


def seeds(env: Mapping[str, str]) -> list[int]:
    """``HOPS_BENCH_SEEDS`` (default 0,1): a one-line error naming the variable for anything but whole numbers."""
    text = env.get("HOPS_BENCH_SEEDS", "0,1")
    parts = [p.strip() for p in text.split(",")]
    if not parts or not all(p.isdigit() and len(p) <= 6 for p in parts):
        raise HopsError(f"HOPS_BENCH_SEEDS: {text[:40]!r} is not a comma-separated list of whole numbers")
    return [int(p) for p in parts]


def settings(env: Mapping[str, str]) -> list[tuple[str, str]]:
    """The rows: ``HOPS_BENCH_SETTINGS`` (Hops policy names, ``;``-separated), else :data:`SETTINGS`."""
    return [row for _, _, rows in groups(env) for row in rows]


def groups(env: Mapping[str, str]) -> list[tuple[str, str, tuple[tuple[str, str], ...]]]:
    """The report's tables: :data:`GROUPS`, or one table of the ``HOPS_BENCH_SETTINGS`` policy names."""
    text = env.get("HOPS_BENCH_SETTINGS", "").strip()
    if not text:
        return list(GROUPS)
    names = [n.strip() for n in text.split(";") if n.strip()]
    bad = [n for n in names if n != "hops" and not n.startswith("hops:")]
    if bad or len(names) > 50:
        raise HopsError(f"HOPS_BENCH_SETTINGS: {(bad or names)[0][:40]!r}: give up to 50 Hops policy names "
                        "(hops or hops:key=value,...), separated by ';'")
    return [("The settings asked for", "The policy names of `HOPS_BENCH_SETTINGS`, in its order.",
             tuple((n, n) for n in names))]


def band(rows: Sequence[tuple[str, str]], results: Sequence[RunResult], seed_list: Sequence[int]) -> list[str]:
    """Per target and seed, the lowest and highest value over ``rows`` (the noise rows): the band."""
    base = {r.seed: r for r in results if r.policy == BASELINE}
    names = {n for _, n in rows}
    parts = []
    for t in TARGETS:
        per_seed = []
        for seed in seed_list:
            values = [t.value(r, base[seed]) for r in results if r.policy in names and r.seed == seed and seed in base]
            if len(values) != len(rows):
                return []
            per_seed.append(f"{min(values):.{t.digits}f}-{max(values):.{t.digits}f}")
        parts.append(f"{t.column.split(' (')[0]} {' / '.join(per_seed)}")
    return [f"The band over these {len(rows)} runs (seed {' / '.join(map(str, seed_list))}): " + "; ".join(parts) + ".",
            ""]


def engine_rows(env: Mapping[str, str], rows: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The rows that also run on the engine path (``HOPS_BENCH_ENGINE``): ``noise``, the default, today's
    defaults and its noise rows where ``rows`` start with them (else the first row); ``first``; ``all``; ``none``."""
    text = env.get("HOPS_BENCH_ENGINE", "noise").strip() or "noise"
    if text not in ENGINE_ROWS:
        raise HopsError(f"HOPS_BENCH_ENGINE: {text[:40]!r} is not one of {', '.join(ENGINE_ROWS)}")
    noise = list(NOISE) if tuple(rows[:len(NOISE)]) == NOISE else list(rows[:1])
    return {"noise": noise, "first": list(rows[:1]), "all": list(rows), "none": []}[text]


def cell(target: Target, runs: Sequence[RunResult], base: Mapping[int, RunResult]) -> tuple[str, bool]:
    """One row's cell for ``target``: each seed's value, ✗ on a seed that misses, and whether all meet it."""
    values = [target.value(r, base[r.seed]) for r in runs]
    met = all(v <= target.bound for v in values)
    text = " / ".join(_shown(v, target) + ("" if v <= target.bound else " ✗") for v in values)
    return text, met


def _shown(value: float, target: Target) -> str:
    """``value`` to the target's digits, two more where those would show a miss as the bound itself."""
    text = f"{value:.{target.digits}f}"
    if value > target.bound and float(text) <= target.bound:
        text = f"{value:.{target.digits + 2}f}"
    return text


def table(rows: Sequence[tuple[str, str]], results: Sequence[RunResult], seed_list: Sequence[int]) -> list[str]:
    """The Markdown table: a row per setting, a column per target (seeds in order), and the targets met."""
    base = {r.seed: r for r in results if r.policy == BASELINE}
    lines = ["| setting | policy | " + " | ".join(t.column for t in TARGETS) + " | targets met on every seed |",
             "|---|---|" + "---|" * len(TARGETS) + "---:|"]
    for label, name in rows:
        runs = sorted((r for r in results if r.policy == name and r.seed in base), key=lambda r: r.seed)
        if len(runs) != len(seed_list):
            lines.append(f"| {label} | `{name}` | " + " | ".join("failed" for _ in TARGETS) + " | – |")
            continue
        cells = [cell(t, runs, base) for t in TARGETS]
        met = sum(m for _, m in cells)
        lines.append(f"| {label} | `{name}` | " + " | ".join(c for c, _ in cells) + f" | {met} of {len(TARGETS)} |")
    return lines


def baseline_line(results: Sequence[RunResult]) -> str:
    runs = sorted((r for r in results if r.policy == BASELINE), key=lambda r: r.seed)
    jct = " / ".join(f"{r.metrics.avg_jct / 3600:.3f}" for r in runs)
    wait = " / ".join(f"{r.metrics.avg_wait / 3600:.3f}" for r in runs)
    return f"sia-lr, the ratios' base: avg JCT {jct} h, avg wait {wait} h."


def engine_section(rows: Sequence[tuple[str, str]], seed_list: Sequence[int]) -> list[str]:
    """The engine path's table (its own sia-lr runs as the base), or nothing when no row runs there."""
    if not rows:
        return []
    start = time.perf_counter()
    names = [n for _, n in rows] + [BASELINE]
    results = compare(load_cluster(CLUSTER), WORKLOAD, names, seed_list, None, progress=False, run=quiet_engine,
                      workers=bench_workers())
    return [
        "## The engine path",
        "",
        "The same targets through the production engine on a simulated slurmctld (`hops-slurm simulate --engine "
        f"--cluster {CLUSTER} --workload {WORKLOAD} --policies POLICY --seeds {','.join(map(str, seed_list))}`; "
        "docs/results/engine-sim.md says where the two paths differ), sia-lr's engine-path runs as the ratios' base.",
        "",
        *table(rows, results, seed_list),
        "",
        *(band(rows, results, seed_list) if tuple(rows) == NOISE else []),
        baseline_line(results),
        "",
        *causes_section(results, [rows[0][1]]),
        *failed_lines(results),
        f"Wall time {time.perf_counter() - start:.0f} s.",
        "",
    ]


def causes_section(results: Sequence[RunResult], names: Sequence[str]) -> list[str]:
    """Preemptions per job by cause (planner.changes) for ``names``, one row per seed."""
    causes = [c.value for c in Change] + ["other"]
    rows = [f"| `{r.policy}` | {r.seed} | {r.metrics.preemptions / max(r.metrics.jobs, 1):.2f} | "
            + " | ".join(f"{r.metrics.preemption_causes.get(c, 0) / max(r.metrics.jobs, 1):.2f}" for c in causes) + " |"
            for name in names for r in sorted((x for x in results if x.policy == name), key=lambda x: x.seed)]
    return [
        "### Where the preemptions come from",
        "",
        "Each preemption the round plans enacted, per job, by why the plan changed the job (`planner/changes.py`: "
        "`requeued`, waiting jobs of more weight took its GPUs; `swapped`, a fragment swap; `explore`, moved to "
        "measure an unmeasured config; `grown`, into idle GPUs; `moved-type`, `moved-count`, `moved-nodes`, the "
        "solve moved it; `other`, a job the plan did not name). The same counts are in each run's `summary.json` "
        "(`preemption_causes`) and, live, in the metric `hops_preemption_causes_total`.",
        "",
        "| policy | seed | all | " + " | ".join(causes) + " |",
        "|" + "---|" * (len(causes) + 3),
        *rows,
        "",
    ]


def failed_lines(results: Comparison) -> list[str]:
    """A line naming each failed run (policy, seed, error), or nothing when every run finished."""
    failed = [f"{f.policy} seed {f.seed}: {f.error}" for f in results.failures]
    return [f"Failed runs: {'; '.join(failed)}.", ""] if failed else []


def run(out_dir: Path) -> Path:
    env = os.environ
    seed_list, tables = seeds(env), groups(env)
    rows = [row for _, _, group in tables for row in group]
    on_engine = engine_rows(env, rows)
    start = time.perf_counter()
    names = list(dict.fromkeys([n for _, n in rows] + [BASELINE]))
    results = compare(load_cluster(CLUSTER), WORKLOAD, names, seed_list, None, progress=False, workers=bench_workers())
    best = max(rows, key=lambda row: _met(row[1], results, seed_list))
    lines = [
        "# Issue 37's Table 4 targets, one row per planner setting",
        "",
        f"Written by `hops-slurm bench {NAME}` (source `hops_slurm/tools/bench/table4_targets.py`): cluster "
        f"`{CLUSTER}`, workload `{WORKLOAD}` (Table 4's setup), seeds {','.join(map(str, seed_list))}, fast path "
        "(`hops-slurm simulate --cluster paper-512 --workload paper --policies POLICY --seeds "
        f"{','.join(map(str, seed_list))}` reruns one row). Each row is today's defaults with the settings its "
        "policy name gives (planner/params.py; docs/design.md, \"Planner parameters\", says what each does). Each "
        "cell gives the seeds' values in order, ✗ on a seed over the target; the last column counts the targets "
        "every seed meets. The rows are the ablation of issue 37: what each rule, on or off, does on one commit.",
        "",
    ]
    for title, intro, group in tables:
        lines += [f"## {title}", "", intro, "", *table(group, results, seed_list), ""]
        if group is NOISE:
            lines += band(group, results, seed_list)
    lines += [
        baseline_line(results),
        "",
        *causes_section(results, [rows[0][1], BASELINE]),
        f"Most targets met on every seed: `{best[1]}` ({_met(best[1], results, seed_list)} of {len(TARGETS)}). "
        + ("Some setting meets all five." if any(_met(n, results, seed_list) == len(TARGETS) for _, n in rows)
           else "No setting here meets all five."),
        "",
        *failed_lines(results),
        f"Wall time {time.perf_counter() - start:.0f} s (fast path); ran on: {results_header.ran_on()}.",
        "",
        *engine_section(on_engine, seed_list),
    ]
    out_dir.mkdir(parents=True, exist_ok=True)
    return results_header.write(out_dir / f"{NAME}.md", "\n".join(lines), generator=f"{__name__}:run",
                                command=command(env))


def _met(name: str, results: Sequence[RunResult], seed_list: Sequence[int]) -> int:
    base = {r.seed: r for r in results if r.policy == BASELINE}
    runs = [r for r in results if r.policy == name and r.seed in base]
    if len(runs) != len(seed_list):
        return -1
    return sum(cell(t, runs, base)[1] for t in TARGETS)


__all__ = ["GROUPS", "NAME", "NOISE", "RULES_OFF", "RULES_ON", "SETTINGS", "TARGETS", "Target", "band", "cell", "command",
           "engine_rows", "engine_section", "failed_lines", "groups", "run", "seeds",
           "settings", "table"]
