"""``hops-slurm simulate``: compare scheduling policies on a simulated cluster (JSON, Markdown, plots).

Data flow: --cluster (etc/clusters name or TOML file) + --workload (generator spec or CSV/JSONL
file) -> hops_slurm.sim.runner.compare for every policy x seed -> --out: per-run JobRecord /
RoundRecord JSONL, summary.json, results.md and PNG plots. With --on-slurm each (policy, seed) run is a
task of a Slurm job array (hops_slurm.tools.sweep), merged into the same outputs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from hops_slurm.cli._args import bounded_float, bounded_int
from hops_slurm.cli._costs import add_cost_arguments, cost_model
from hops_slurm.cli._sweep import add_slurm_arguments, run_on_slurm
from hops_slurm.errors import HopsError
from hops_slurm.sim.comparison import results_text, write_plots, write_summary
from hops_slurm.sim.runner import Options, RunResult, compare
from hops_slurm.sim.traces.specs import has_notes, load_any_cluster, workload_and_notes
from hops_slurm.text import printable
from planner.policies import make_policy, policy_names, split_policy_list


def _ints(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from exc


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="run policies on a simulated cluster and compare them",
                       description="Run scheduling policies on a simulated cluster and workload, every seed, and "
                                   "compare them: a table on stdout, summary.json, results.md, plots and each "
                                   "run's records in --out.")
    p.add_argument("--cluster", default="paper-64",
                   help="cluster name in etc/clusters, a TOML file, or alibaba:NODE_CSV (an Alibaba GPU trace v2023 "
                        "node list; docs/traces.md) (default paper-64)")
    p.add_argument("--workload", default="paper",
                   help="paper[:jobs=N,rate=R,mix=S/M/L/XL], sweep:rate=R, gavel[:jobs=N,rate=R], "
                        "philly[:trace=ID,jobs=N], a .csv/.jsonl trace file, sia:WORKLOAD_CSV_OR_DIR[,profiles=DIR] "
                        "(Sia's artifact) or alibaba:POD_CSV[,jobs=N] (Alibaba GPU trace v2023; docs/traces.md); "
                        "any of them may end in ,speedup=K,start=S,end=E: a time-scaled replay of the arrivals "
                        "in [S, E) with gaps K times shorter (docs/traces.md) (default paper)")
    p.add_argument("--policies", default=None, help="comma-separated policy names (default: all available); a Hops policy may carry "
                   "planner parameters: hops:restart_penalty=0.1,sigma=1.2")
    p.add_argument("--seeds", type=_ints, default=[0], help="comma-separated seeds (default 0)")
    p.add_argument("--out", type=Path, default=Path("sim-out"), help="output folder (default sim-out)")
    p.add_argument("--round-seconds", type=bounded_float(0, 86400, low_open=True), default=360.0, help="round length (default 360)")
    p.add_argument("--refresh-seconds", type=bounded_float(0, 86400, low_open=True), default=30.0, help="queue refresh / fragment plans (default 30)")
    p.add_argument("--fragment-plans", choices=("at-once", "at-ticks"), default="at-once",
                   help="fragment plans right after each round plan and at refresh ticks (at-once, the paper's), "
                        "or only at refresh ticks (at-ticks, for the ablation)")
    p.add_argument("--engine", action="store_true",
                   help="run each policy inside the production engine (hops-slurm daemon's Engine: probe jobs, runtime "
                        "record files, journal, records.sqlite) against a simulated slurmctld; slower, the same results "
                        "within a few percent (docs/simulator.md)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr (shown only when stderr is a terminal)")
    p.add_argument("--workers", type=bounded_int(1, 64), default=1,
                   help="simulations run at once, each in its own process (default 1; the results are the same)")
    p.add_argument("--plan-on-events", action="store_true",
                   help="every policy also plans (fragment plans) at each arrival and job end between refresh ticks, "
                        "as slurm-backfill and slurm-multifactor always do (for long traces with longer refresh ticks)")
    p.add_argument("--event-gap", type=bounded_float(0, 3600), default=None, metavar="SECONDS",
                   help="with planning on events: events sooner than this after the last planning are merged into one "
                        "planning then (default 0; slurm-backfill and slurm-multifactor: 3, slurmctld's batch_sched_delay; "
                        "docs/simulator.md)")
    p.add_argument("--max-days", type=bounded_float(0, 3650, low_open=True), default=90.0,
                   help="the simulator's safety stop: a run still going after this many days of virtual time fails "
                        "(default 90; a replayed trace that spans longer, such as Alibaba's 145 days, needs more)")
    add_slurm_arguments(p, "each (policy, seed) run")
    add_cost_arguments(p)
    p.set_defaults(func=_run)


def options_of(args: argparse.Namespace) -> Options:
    """The simulation options the command's flags describe (the local run's and each Slurm task's)."""
    return Options(args.round_seconds, args.refresh_seconds, cost_model(args),
                   fragment_at_once=args.fragment_plans == "at-once", max_days=getattr(args, "max_days", 90.0),
                   plan_on_events=getattr(args, "plan_on_events", False), event_gap=getattr(args, "event_gap", None))


def runner_of(args: argparse.Namespace) -> Callable[..., RunResult] | None:
    """How one run is simulated: the production engine with --engine, else the fast path (None)."""
    if args.engine:
        from hops_slurm.sim.engine_run import simulate_engine

        return simulate_engine
    return None


def _run(args: argparse.Namespace) -> int:
    policies = split_policy_list(args.policies) if args.policies else policy_names()
    if not policies:
        raise HopsError("no policies given")
    if not args.seeds:
        raise HopsError("no seeds given")
    if min(args.round_seconds, args.refresh_seconds) <= 0:
        raise HopsError("--round-seconds and --refresh-seconds must be > 0")
    for name in policies:
        make_policy(name)  # fail on a bad name before any run starts
    cluster, imported = load_any_cluster(args.cluster)
    notes = list(imported.notes)
    if has_notes(args.workload):
        jobs, assumed = workload_and_notes(args.workload, args.seeds[0], cluster)
        notes += assumed.notes
        if args.engine and any(j.classes for j in jobs):
            raise HopsError("--engine does not model GPU-type constraints; run this workload without --engine")
    for note in notes:  # what the import assumed: on stderr, and in results.md
        print(f"hops-slurm: note: {printable(note)}", file=sys.stderr)
    options = options_of(args)
    # the bar only on a terminal; in logs and pipes the command is quiet until its results
    progress = not args.no_progress and sys.stderr.isatty()
    if args.on_slurm:
        results = run_on_slurm(args, policies)
    else:
        results = compare(cluster, args.workload, policies, args.seeds, args.out, options, progress=progress,
                          run=runner_of(args), workers=args.workers)
    header = (f"# Simulation: cluster {cluster.name} ({cluster.total_gpus} GPUs), workload {args.workload}, "
              f"seeds {','.join(map(str, args.seeds))}\n\nCosts: {options.costs.describe()}."
              + "".join(f"\n\nImport: {printable(n)}." for n in notes))
    write_summary(results, args.out, header)
    write_plots(results, args.out)
    print(results_text(results), end="")
    print(f"wrote {args.out}/summary.json, results.md, plots and per-run records")
    for f in results.failures:
        print(f"hops-slurm: error: {f.policy} seed {f.seed} failed: {f.error}", file=sys.stderr)
    return 1 if results.failures else 0
