"""One simulation and a comparison grid: (cluster, workload, policy, seed) -> records + metrics.

Data flow: :func:`simulate` builds the SimBackend for a workload, drives a fresh policy through the
round loop, and returns a :class:`RunResult`; :func:`compare` runs every (policy, seed) pair, writes
each run's JobRecord / RoundRecord JSONL and the live engine's records file (``records.sqlite``, the
format ``hops-slurm report --records`` reads from a cluster) under ``out/<policy>/seed<k>/`` and
shows a progress line. A policy name too long for a file name (many settings after the colon) or with a
``/`` gets a shortened folder name with a digest (:func:`policy_folder`) and its whole name in
``policy.txt`` there.
A run that fails (a policy error, the simulator's 90-day guard) does not lose the comparison: it is
kept as a :class:`RunFailure` (``error.txt`` in its folder) and every other run still completes.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from estimator.honesty import HonestyParams
from hops_slurm.errors import HopsError
from hops_slurm.records import JobRecord, RoundRecord
from hops_slurm.report.source import write_sqlite
from hops_slurm.sim.sim_backend import SimBackend, SimSettings
from hops_slurm.sim.bound import physical_bound
from hops_slurm.sim.cluster_spec import ClusterSpec
from hops_slurm.sim.costs import CostModel
from hops_slurm.sim.site import as_slurm_runs, is_site_policy
from hops_slurm.core.rounds import LoopSettings, run_rounds
from hops_slurm.report.metrics import RunMetrics, summarize
from hops_slurm.sim.traces.specs import load_any_workload
from hops_slurm.sim.workload import JobSpec
from hops_slurm.validation import reason
from planner.policies import make_policy


@dataclass
class RunResult:
    policy: str
    seed: int
    jobs: list[JobRecord]
    rounds: list[RoundRecord]
    series: list[tuple[float, int, float]]
    metrics: RunMetrics
    wall_seconds: float = 0.0
    #: the workload's physical bound, avg JCT in seconds (:mod:`hops_slurm.sim.bound`; set by :func:`compare`)
    bound_avg_jct: float | None = None
    #: why each planning instant stopped, counted (:data:`hops_slurm.core.rounds.EXIT_REASONS`; ``exits.json``)
    exits: dict[str, int] = field(default_factory=dict)


@dataclass
class RunFailure:
    """One (policy, seed) run that raised: the policy, the seed and the one-line reason."""

    policy: str
    seed: int
    error: str


class Comparison(list[RunResult]):
    """The completed runs of :func:`compare` (a list, as before) plus the failed ones."""

    def __init__(self, results: Sequence[RunResult] = (), failures: Sequence[RunFailure] = ()) -> None:
        super().__init__(results)
        self.failures: list[RunFailure] = list(failures)


@dataclass
class Options:
    round_seconds: float = 360.0
    refresh_seconds: float = 30.0
    #: what starts, notices and restarts cost, on both paths (:mod:`hops_slurm.sim.costs`)
    costs: CostModel = field(default_factory=CostModel)
    #: fragment plans at the round plan's instant (the paper's); False: only at refresh ticks
    fragment_at_once: bool = True
    #: the defences against understated samples (None: estimator.honesty's defaults, on)
    honesty: HonestyParams | None = None
    #: plan at each event between refresh ticks too (:class:`hops_slurm.core.rounds.LoopSettings`)
    plan_on_events: bool = False
    #: with ``plan_on_events``: events sooner than this many seconds after the last planning are merged into one
    #: planning (:attr:`hops_slurm.core.timetable.LoopSettings.event_gap`); None: 0, and for the site's own
    #: Slurm policies slurmctld's default ``batch_sched_delay`` (:data:`hops_slurm.sim.site.SLURM_EVENT_GAP`)
    event_gap: float | None = None
    #: run the site's own Slurm policies as Slurm runs them (:mod:`hops_slurm.sim.site`: no probes, scheduling
    #: at each submission and end); False: as the engine runs every policy (probes, refresh ticks)
    site_as_slurm: bool = True
    #: the engine path only (:mod:`hops_slurm.sim.engine_run`): the daemon's monitor step every this many
    #: seconds (``[engine] monitor_interval``: an ended or newly submitted job -> refresh and fragment plan);
    #: None: no monitor step, plans at rounds and refresh ticks only
    monitor_seconds: float | None = None
    #: the simulator's safety stop (:attr:`hops_slurm.sim.sim_backend.SimSettings.max_seconds`), in days of
    #: virtual time: a replayed trace longer than 90 days (Alibaba's v2023 spans 145) needs more
    max_days: float = 90.0


def simulate(
    cluster: ClusterSpec,
    jobs: tuple[JobSpec, ...],
    policy_name: str,
    seed: int = 0,
    options: Options = Options(),
    on_round: Callable[[float, int], None] | None = None,
) -> RunResult:
    """Run ``policy_name`` on ``cluster`` with ``jobs`` to completion; deterministic for the inputs. A policy
    of the site's own Slurm runs as Slurm runs it (:func:`hops_slurm.sim.site.as_slurm_runs`) unless
    ``options.site_as_slurm`` is off."""
    start = time.perf_counter()
    if options.site_as_slurm and is_site_policy(policy_name):
        cluster, options = as_slurm_runs(cluster, options)
    settings = SimSettings(costs=options.costs, max_seconds=options.max_days * 86400.0)
    if options.honesty is not None:
        settings.honesty = options.honesty
    backend = SimBackend(cluster, jobs, settings)
    policy = make_policy(policy_name)

    def tick(now: float) -> None:
        if on_round:
            on_round(now, len(backend.finished))

    exits: dict[str, int] = {}
    try:
        rounds = run_rounds(backend, policy, LoopSettings(options.round_seconds, options.refresh_seconds,
                                                          fragment_at_once=options.fragment_at_once,
                                                          plan_on_events=options.plan_on_events,
                                                          event_gap=options.event_gap or 0.0),
                            on_round=tick, exits=exits)
    except HopsError as exc:
        raise HopsError(f"policy {policy_name!r}, seed {seed}: {exc}") from exc
    finally:
        backend.close()
    records = backend.job_records()
    return RunResult(policy_name, seed, records, rounds, backend.series, summarize(records, rounds),
                     time.perf_counter() - start, exits=dict(sorted(exits.items())))


#: the longest policy name used as a folder name as it is (a file name may have 255 bytes)
FOLDER_NAME_MAX = 120


def policy_folder(name: str) -> str:
    """The folder name of a policy's runs: the name itself when it is a safe file name of at most
    :data:`FOLDER_NAME_MAX` bytes, else its first 80 characters (``/`` made ``_``), ``~`` and 12 hex
    digits of its SHA-256, so that two long names that differ only at the end do not share a folder."""
    if "/" not in name and name not in ("", ".", "..") and len(name.encode()) <= FOLDER_NAME_MAX:
        return name
    head = name[:80].replace("/", "_").lstrip(".") or "policy"
    return f"{head}~{hashlib.sha256(name.encode()).hexdigest()[:12]}"


def run_folder(out: Path, name: str, seed: int) -> Path:
    """Where one run's records go: ``out/<policy_folder(name)>/seed<seed>``; a shortened policy folder
    gets the whole name in its ``policy.txt``."""
    top = out / policy_folder(name)
    if top.name != name:
        top.mkdir(parents=True, exist_ok=True)
        (top / "policy.txt").write_text(name + "\n")
    return top / f"seed{seed}"


def write_run(result: RunResult, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "jobs.jsonl").open("w") as fh:
        for rec in result.jobs:
            fh.write(rec.model_dump_json() + "\n")
    with (folder / "rounds.jsonl").open("w") as fh:
        for rec in result.rounds:
            fh.write(rec.model_dump_json() + "\n")
    with (folder / "throughput.csv").open("w") as fh:
        fh.write("time_s,gpus_in_use,normalised_throughput\n")
        for t, used, norm in result.series:
            fh.write(f"{t:.3f},{used},{norm:.6f}\n")
    (folder / "metrics.json").write_text(json.dumps(result.metrics.table_row(), indent=2) + "\n")
    (folder / "exits.json").write_text(json.dumps(result.exits, indent=2) + "\n")  # why planning instants stopped
    sqlite = folder / "records.sqlite"
    sqlite.unlink(missing_ok=True)  # write_sqlite appends plans: start from an empty file
    write_sqlite(sqlite, result.jobs, result.rounds)


@dataclass
class Progress:
    """A one-line stderr progress bar: runs done, the current run's jobs done and virtual hours."""

    total_runs: int
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    done_runs: int = 0
    enabled: bool = True
    _last: float = 0.0

    def show(self, label: str, jobs_done: int, jobs_total: int, now: float, *, force: bool = False) -> None:
        """Redraw at most twice a second on a terminal; elsewhere (logs, CI) one line per finished run."""
        if not self.enabled:
            return
        tty = self.stream.isatty()
        if not force and (not tty or time.monotonic() - self._last < 0.5):
            return
        self._last = time.monotonic()
        width = 24
        frac = min(1.0, (self.done_runs + (jobs_done / max(jobs_total, 1) if not force else 0.0)) / self.total_runs)
        bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
        line = f"[{bar}] {self.done_runs}/{self.total_runs} runs; {label}: {jobs_done}/{jobs_total} jobs, t={now / 3600:.1f} h"
        self.stream.write(("\r" + line + " ") if tty else (line + "\n"))
        self.stream.flush()

    def finish(self) -> None:
        if self.enabled and self.stream.isatty():
            self.stream.write("\n")
            self.stream.flush()


def compare(
    cluster: ClusterSpec,
    workload: str,
    policies: Sequence[str],
    seeds: Sequence[int],
    out: Path | None,
    options: Options = Options(),
    progress: bool = True,
    run: Callable[..., RunResult] | None = None,
    workers: int = 1,
) -> Comparison:
    """Every policy on the same seeded workload; writes per-run records under ``out`` when given.
    A run that raises is recorded in ``failures`` (and ``error.txt``); the others go on. ``run``: how
    one run is simulated (default :func:`simulate`; ``hops-slurm simulate --engine`` passes
    :func:`hops_slurm.sim.engine_run.simulate_engine`, the production engine on a simulated slurmctld).
    ``workers`` > 1: the runs go to that many processes at once (each run is independent and seeded;
    results in the same order as one at a time, no progress line)."""
    run = run or simulate
    results = Comparison()
    bar = Progress(len(policies) * len(seeds), enabled=progress and workers <= 1)
    tasks: list[tuple[int, str, tuple[JobSpec, ...], float]] = []
    for seed in seeds:
        jobs = load_any_workload(workload, seed, cluster)
        bound = physical_bound(cluster, jobs).avg_jct
        tasks.extend((seed, name, jobs, bound) for name in policies)

    def outcomes() -> Iterator[RunResult | str]:  # in the order of tasks, each as soon as it is there
        if workers > 1 and len(tasks) > 1:
            from concurrent.futures import ProcessPoolExecutor

            with ProcessPoolExecutor(max_workers=min(workers, len(tasks))) as pool:
                futures = [pool.submit(_run_one, run, cluster, jobs, name, seed, options) for seed, name, jobs, _b in tasks]
                for f in futures:
                    yield f.result()
            return
        for seed, name, jobs, _b in tasks:
            yield _run_one(run, cluster, jobs, name, seed, options,
                           lambda now, n, label=f"{name} seed {seed}", total=len(jobs): bar.show(label, n, total, now))

    for (seed, name, jobs, bound), outcome in zip(tasks, outcomes()):
        bar.done_runs += 1
        if isinstance(outcome, str):  # one failed policy must not lose the comparison
            results.failures.append(RunFailure(name, seed, outcome))
            if out is not None:
                folder = run_folder(out, name, seed)
                folder.mkdir(parents=True, exist_ok=True)
                (folder / "error.txt").write_text(outcome + "\n")
            continue
        outcome.bound_avg_jct = bound
        bar.show(f"{name} seed {seed}", len(jobs), len(jobs), max(j.end or 0.0 for j in outcome.jobs), force=True)
        if out is not None:
            write_run(outcome, run_folder(out, name, seed))
        results.append(outcome)
    bar.finish()
    return results


def _run_one(run: Callable[..., RunResult], cluster: ClusterSpec, jobs: tuple[JobSpec, ...], name: str, seed: int,
             options: Options, on_round: Callable[[float, int], None] | None = None) -> RunResult | str:
    """One run of :func:`compare`: its result, or why it failed (a one-line reason)."""
    try:
        return run(cluster, jobs, name, seed, options, on_round=on_round)
    except Exception as exc:  # noqa: BLE001 - recorded as the run's failure
        return reason(exc)
