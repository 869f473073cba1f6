"""Benchmark ``paper-tables``: the Hops paper's Tables 3 and 4 and §4.4-4.6 side by side with ours.

Data flow: hops_slurm.sim.runner.compare on paper-64 (Table 3) and paper-512 (Table 4, FTF, the
priority ablation, the rate sweep) -> docs/results/paper-tables.md with the paper's numbers beside
ours, plus the plots and per-run records under docs/results/paper-tables/. ``HOPS_BENCH_SEEDS`` (default ``0,1,2``),
``HOPS_BENCH_POLICIES`` (a comma-separated subset; the section then says which were left out) and
``HOPS_BENCH_QUICK=1`` (paper-64 only, one seed: a quick look) shorten it; ``HOPS_BENCH_WORKERS=N``
(default 1) runs a section's simulations N at a time, each in its own process (the results are the same).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from hops_slurm.errors import HopsError
from hops_slurm.sim.cluster_spec import load_cluster
from hops_slurm.sim.comparison import markdown_table, write_plots, write_summary
from hops_slurm.sim.runner import Options, RunResult, compare
from hops_slurm.tools import results_header

NAME = "paper-tables"
#: the environment variables this benchmark reads (they precede the command in its results header)
ENV = ("HOPS_BENCH_PARTS", "HOPS_BENCH_QUICK", "HOPS_BENCH_SEEDS", "HOPS_BENCH_POLICIES", "HOPS_BENCH_WORKERS")


def command(env: Mapping[str, str]) -> str:
    """The command that reruns this benchmark as it runs under ``env`` (its results header)."""
    return results_header.bench_command(NAME, ENV, env)


#: SoCC '24 Table 3 (physical, 64 GPUs) and Table 4 (simulated, 512 GPUs), verbatim
PAPER_TABLE_3 = """| Policy | Makespan | Avg.JCT | Avg.WT | Max.LR | Avg.frag |
|---|---|---|---|---|---|
| Hops | 9.51h | 3.2h | 0.95h | 37% | 0.15 |
| Sia | 11.68h | 4.41h | 1.47h | 103% | 5.89 |
| Gavel | 14.46h | 5.92h | 2.11h | 131% | 3.36 |
"""
PAPER_TABLE_4 = """| Policy | Makespan | Avg.JCT | Avg.WT | Max.LR | Avg.frag |
|---|---|---|---|---|---|
| Hops | 10.48h | 2.24h | 0.87h | 3.22 | 0.45 |
| Sia | 12.36h | 3.79h | 1.68h | 78.5 | 56 |
| Gavel | 15.42h | 4.04h | 2.24h | 70.43 | 18 |
"""
MAIN = ["hops", "sia-lr", "gavel-lr", "sia", "gavel", "themis", "slurm-backfill", "slurm-multifactor"]
ABLATION = ["hops", "hops-las", "hops-sjf", "hops-srtf", "hops-fifo"]
FTF = ["hops-ftf", "sia-lr", "gavel-lr", "themis"]
RATES = [30, 60, 120, 300, 600, 1200]
SWEEP = ["hops", "sia-lr", "gavel-lr"]
#: the rigid-request trace and Gavel's workload: Hops beside the baselines that finish them in reasonable time
RIGID = ["hops", "sia-lr", "gavel-lr", "themis", "slurm-backfill", "slurm-multifactor"]


def bench_workers() -> int:
    """Simulations run at once by a section (``HOPS_BENCH_WORKERS``, 1 to 64; default 1)."""
    text = os.environ.get("HOPS_BENCH_WORKERS", "1").strip()
    if not text.isdigit() or not 1 <= int(text) <= 64:
        raise HopsError(f"HOPS_BENCH_WORKERS: {text[:20]!r} is not a whole number from 1 to 64")
    return int(text)


def bench_seeds() -> list[int]:
    """The seeds of every simulation benchmark: ``HOPS_BENCH_SEEDS`` (default ``0,1,2``)."""
    return [int(s) for s in os.environ.get("HOPS_BENCH_SEEDS", "0,1,2").split(",")]


def write_report(out_dir: Path, name: str, intro: list[str], sections: Callable[[list[int], Path], list[str]], *,
                 generator: str, command: str) -> Path:
    """``out_dir/<name>.md`` under the results header of ``generator`` and ``command``: the ``intro`` lines,
    then the :func:`section` texts ``sections(seeds, data)`` returns; their per-run records and plots go
    under ``data`` = ``out_dir/<name>/``."""
    data = out_dir / name
    data.mkdir(parents=True, exist_ok=True)
    text = "\n".join([*intro, *sections(bench_seeds(), data)]) + "\n"
    return results_header.write(out_dir / f"{name}.md", text, generator=generator, command=command)


def section(title: str, cluster: str, workload: str, names: list[str], seeds: list[int], out: Path,
             tag: str, paper: str = "", options: Options | None = None, note: str = "") -> str:
    only = [p for p in os.environ.get("HOPS_BENCH_POLICIES", "").split(",") if p]
    skipped = [n for n in names if only and n not in only]
    names = [n for n in names if n not in skipped]
    if skipped:
        note = (note + " " if note else "") + f"Not re-run this time (HOPS_BENCH_POLICIES): {', '.join(skipped)}."
    lines = [f"## {title}", "", f"Cluster `{cluster}`, workload `{workload}`, seeds {','.join(map(str, seeds))}."
             + (f" {note}" if note else ""), ""]
    if paper:
        lines += ["Paper:", "", paper, "Ours (mean ± sample std over seeds):", ""]
    start = time.perf_counter()
    try:
        results = compare(load_cluster(cluster), workload, names, seeds, out / tag, options or Options(), progress=False,
                          workers=bench_workers())
    except HopsError as exc:  # the workload or cluster itself: no run could start
        return "\n".join(lines + [f"Failed: {exc}", ""])
    write_summary(results, out / tag)
    if not results:
        return "\n".join(lines + [markdown_table(results), ""])
    plots = write_plots(results, out, prefix=f"{tag}-")
    lines.append(markdown_table(results))
    lines += served_lines(results)
    lines.append(f"Wall time {time.perf_counter() - start:.0f} s; ran on: {results_header.ran_on()}.")
    lines += ["", *[f"![{p.stem}]({out.name}/{p.name})" for p in plots], ""]
    return "\n".join(lines)


def served_lines(results: Sequence[RunResult]) -> list[str]:
    """Lines under a table whose runs set jobs aside: per seed, whether every policy completed every job
    some policy completed, and what was set aside (model, GPU count) and why, per policy."""
    if not any(r.metrics.set_aside for r in results):
        return []
    out: list[str] = []
    for seed in sorted({r.seed for r in results}):
        runs = [r for r in results if r.seed == seed]
        done = {r.policy: {j.job_id for j in r.jobs if j.state == "COMPLETED"} for r in runs}
        servable = set().union(*done.values())
        missing = {p: sorted(servable - d) for p, d in done.items() if servable - d}
        out.append(f"Seed {seed}: {len(servable)} jobs completed by some policy; "
                   + ("every policy completed all of them." if not missing else "not completed by "
                      + "; ".join(f"{p}: {len(m)} ({', '.join(m[:5])}{', ...' if len(m) > 5 else ''})"
                                  for p, m in missing.items()) + "."))
        aside = {r.policy: [j for j in r.jobs if j.state == "CANCELLED" and j.aside] for r in runs}
        same = len({tuple(sorted(j.job_id for j in a)) for a in aside.values()}) == 1
        for policy, jobs in ([("every policy", next(iter(aside.values())))] if same else aside.items()):
            if not jobs:
                continue
            kinds = Counter(f"{j.name} on {j.requirements[-1] if j.requirements else '?'} GPUs" for j in jobs)
            reasons = Counter(j.aside.split(":")[0] for j in jobs)
            out.append(f"- {policy} set aside {'the same ' if same and len(runs) > 1 else ''}{len(jobs)}: "
                       + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
                       + "; reason " + "; ".join(f"'{k}' ({n})" for k, n in reasons.items()) + ".")
    return ["", *out, ""]


#: the parts of this benchmark; ``HOPS_BENCH_PARTS=table3,table4`` runs only those (each part's text is
#: kept under paper-tables/parts/ and paper-tables.md is assembled from every part written so far)
PARTS = ("table3", "table4", "rigid", "gavel", "ftf", "ablation", "sweep")


def _part(name: str, seeds: list[int], data: Path) -> str:
    if name == "table3":
        return section("Table 3: 64 GPUs", "paper-64", "paper", MAIN, seeds, data, "table3", PAPER_TABLE_3)
    if name == "table4":
        return section("Table 4: 512 GPUs, 500 jobs at 100/h", "paper-512", "paper", MAIN, seeds, data, "table4",
                       PAPER_TABLE_4)
    if name == "rigid":
        return section("Rigid requests: a Philly-derived trace on 64 GPUs (each job asks for one GPU count)",
                       "paper-64", "philly:trace=0e4a51,jobs=300", RIGID, seeds[:1], data, "rigid")
    if name == "gavel":
        return section("Gavel's workload on 64 GPUs", "paper-64", "gavel", RIGID, seeds, data, "gavel")
    if name == "ftf":
        return section("FTF (§4.4): Hops with FTF priority (λ = 2) vs baselines; paper: max ρ 2.15 (Hops) vs "
                       "28.27 (Sia), 32.01 (Gavel)", "paper-512", "paper", FTF, seeds[:1], data, "ftf")
    if name == "ablation":
        return section("Priority ablation (§4.5): LR vs LAS, SJF, SRTF, FIFO in the Hops architecture", "paper-512",
                       "paper", ABLATION, seeds[:1], data, "ablation")
    return "\n".join(section(f"Rate sweep (§4.6): {rate} jobs/h", "paper-512", f"sweep:rate={rate}", SWEEP,
                             seeds[:1], data, f"rate{rate}") for rate in RATES)


def parts(env: Mapping[str, str]) -> list[str]:
    """The parts a run under ``env`` writes (``HOPS_BENCH_PARTS``; ``HOPS_BENCH_QUICK=1``: table3 only)."""
    if env.get("HOPS_BENCH_QUICK") == "1":
        return ["table3"]
    chosen = [p for p in env.get("HOPS_BENCH_PARTS", ",".join(PARTS)).split(",") if p]
    unknown = sorted(set(chosen) - set(PARTS))
    if unknown:
        raise HopsError(f"HOPS_BENCH_PARTS: unknown part(s) {', '.join(unknown)}; known: {', '.join(PARTS)}")
    return chosen


def run(out_dir: Path) -> Path:
    seeds = bench_seeds()
    if os.environ.get("HOPS_BENCH_QUICK") == "1":
        seeds = seeds[:1]
    chosen = parts(os.environ)
    data = out_dir / "paper-tables"
    (data / "parts").mkdir(parents=True, exist_ok=True)
    for name in chosen:
        (data / "parts" / f"{name}.md").write_text(_part(name, seeds, data) + "\n")
    return assemble(out_dir)


def assemble(out_dir: Path) -> Path:
    """``out_dir/paper-tables.md`` from every part written so far under ``out_dir/paper-tables/parts/``."""
    data = out_dir / "paper-tables"
    texts = [
        "# The Hops paper's experiments, reproduced in the simulator",
        "",
        "Written by `hops-slurm bench paper-tables` (`make bench`). Ground truth: Gavel's measured throughputs "
        "(k80/p100/v100) with entity speed factors per server kind; clusters `etc/clusters/paper-64.toml` and "
        "`paper-512.toml`; workloads and rules in docs/simulator.md; the planning rules in docs/design.md. "
        "Times in hours; Max.LR = max wait/age (eq. 6); "
        "Avg.frag = idle GPUs while a job is unassigned after the plans of a round's instant (the round plan "
        "and the fragment plans that follow it at once), mean over rounds; ρ = JCT / T_id (Themis). "
        "Unfinished > 0 means the policy never placed those jobs (e.g. plain `sia` when no count in a job's "
        "requirement set is in Sia's config space, or a rigid request of a model that cannot run on that "
        "many GPUs); its averages then cover completed jobs only and are not "
        "comparable. `gavel-lr` / `sia-lr` are the baselines as the Hops paper ran them (LR-priority weights; "
        "Sia with one config per requirement).",
        "",
    ]
    texts += [(data / "parts" / f"{name}.md").read_text() for name in PARTS if (data / "parts" / f"{name}.md").is_file()]
    path = out_dir / "paper-tables.md"
    return results_header.write(path, "\n".join(texts) + "\n", generator=f"{__name__}:run",
                                 command=command(os.environ))
