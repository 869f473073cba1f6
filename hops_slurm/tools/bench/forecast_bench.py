"""Benchmark ``forecast`` (issue 35): how close are forecast starts to actual ones, Hops's and Slurm's?

Data flow: a workload -> the simulator's round loop (:func:`hops_slurm.core.rounds.run_rounds` over
:class:`hops_slurm.sim.sim_backend.SimBackend`) under one policy -> at each round boundary every waiting
job's forecast start, made from the views that round plans with (estimates, never the simulator's ground
truth):

* ``hops``: the engine's forecast (:func:`hops_slurm.engine.forecaster.run_forecast`: the round loop run
  forward in the simulator from now, with a copy of the policy), its band from the errors of the
  forecasts of the jobs started so far (:class:`planner.forecast.ErrorBand`, as the daemon makes it;
  :func:`replay_band` gives it after the run, in the run's order: the band never shapes the run);
* ``slurm-backfill``: Slurm's expected start (``squeue --start``: :func:`planner.slurm_start.expected_starts`,
  from the jobs' time limits) under the simulator's Slurm backfill policy.

After the run, per job, against its actual (first) start: the forecast made at the first boundary after
its submission ("at submission") and at the last boundary at least one round before its start ("one
round before"), error = |forecast - actual| / actual wait. Median and 90th percentile over the jobs that
waited at least one round; the others are counted apart. The band's coverage (the fraction of starts
inside it) at submission over all jobs, over those that waited a round, and over every forecast made,
and its median width at submission relative to the wait (of the jobs that waited a round). Writes
``forecast.md`` and a plot.

``HOPS_BENCH_FORECAST`` = ``;``-separated ``cluster:workload:seeds`` runs (default
``paper-512:paper:0,1;paper-64:gavel:0``), ``HOPS_BENCH_FORECAST_BUDGET`` (wall seconds per forecast,
default 20), ``HOPS_BENCH_FORECAST_ALLOWANCE`` (wall seconds per run, then it stops at the next round
boundary and the jobs started by then count; default none), ``HOPS_BENCH_FORECAST_RECORDS`` (a folder: each
finished run's raw forecasts are written there, and a run already recorded there, with the same budget and
to the end or at the same allowance, is read back instead of simulated: the band and the tables are made
again without recomputing a forecast, and the runs can be made in separate processes, then put together).
``HOPS_BENCH_FORECAST_ARRIVALS`` (what each Hops forecast expects to arrive: ``W`` seconds of the last
submissions again, ``W:H``, or ``oracle``, the run's own later submissions; default: the daemon's
``[engine] forecast_arrivals``, :class:`hops_slurm.tools.bench.forecast_expected.Expected`) and
``HOPS_BENCH_FORECAST_BESIDE`` (a ``,``-separated list of those: the same Hops runs again with each, and a
section that puts their errors side by side, :func:`made_of`).
Not in ``all``: tens of minutes. ``HOPS_BENCH_PARTS=scale``: the speed part
(:mod:`hops_slurm.tools.bench.forecast_scale`).
"""

from __future__ import annotations

import bisect
import json
import os
import statistics
import time
from dataclasses import dataclass, field
from collections.abc import Mapping
from pathlib import Path

from hops_slurm.core.rounds import LoopSettings, run_rounds
from hops_slurm.config import EngineConfig
from hops_slurm.engine.forecaster import policy_copy, run_forecast
from hops_slurm.sim.forecast_arrivals import ArrivalHistory
from hops_slurm.sim.cluster_spec import load_cluster
from hops_slurm.sim.forecast_run import Timetable
from hops_slurm.sim.runner import Options
from hops_slurm.sim.sim_backend import SimBackend, SimSettings
from hops_slurm.sim.workload import load_workload
from hops_slurm.tools.bench import forecast_scale
from hops_slurm.tools.bench.forecast_expected import Expected, later_submissions
from hops_slurm.tools import results_header
from planner.baselines.slurm_backfill import SlurmBackfillPolicy
from planner.forecast import ErrorBand, Forecast
from planner.policies import make_policy
from planner.slurm_start import expected_starts

NAME = "forecast"
IN_ALL = False
ROUND = 360.0
DEFAULT_RUNS = "paper-512:paper:0,1;paper-64:gavel:0"
#: the HOPS_BENCH_* variables it reads (they precede the command in its results header)
ENV = ("HOPS_BENCH_PARTS", "HOPS_BENCH_FORECAST", "HOPS_BENCH_FORECAST_BUDGET", "HOPS_BENCH_FORECAST_ALLOWANCE",
       "HOPS_BENCH_FORECAST_RECORDS", "HOPS_BENCH_FORECAST_ARRIVALS", "HOPS_BENCH_FORECAST_BESIDE")
#: seconds of recent submissions each Hops forecast expects again (``[engine] forecast_arrivals``' default;
#: ``HOPS_BENCH_FORECAST_ARRIVALS`` sets it, 0 = only the jobs of now)
ARRIVALS = float(EngineConfig.model_fields["forecast_arrivals"].default)


def command(env: Mapping[str, str]) -> str:
    """The command that reruns this benchmark as it runs under ``env`` (:mod:`hops_slurm.tools.results_header`)."""
    return results_header.bench_command(NAME, ENV, env)


@dataclass
class Made:
    at: float
    start: float | None
    early: float | None = None
    late: float | None = None
    ahead: int | None = None  # the jobs forecast then to start before it


@dataclass
class JobOutcome:
    job_id: str
    submit: float
    start: float
    made: list[Made]  # every forecast made for it between its submission and its start, in time order

    @property
    def wait(self) -> float:
        return self.start - self.submit

    @property
    def first(self) -> Made | None:
        """The forecast at submission (the first boundary after it)."""
        return self.made[0] if self.made else None

    @property
    def before(self) -> Made | None:
        """The last forecast made at least one round before the start (else the first)."""
        got = [m for m in self.made if m.at <= self.start - ROUND]
        return got[-1] if got else self.first


def replay_band(jobs: list[JobOutcome], band: ErrorBand, by_ahead: bool = False) -> None:
    """Give every forecast its band as the daemon's forecaster does, in time order: at each boundary the
    jobs started by then put their first and latest forecasts' errors into ``band``
    (:meth:`~planner.forecast.ErrorBand.add`), then that boundary's forecasts get their band from it
    (the band never shapes the run, so it is made after it, from the same forecasts in the same order).
    ``by_ahead``: its classes apart also by the jobs forecast to start before each (the daemon's do not yet)."""
    at: dict[float, list[tuple[JobOutcome, Made]]] = {}
    for j in jobs:
        for m in j.made:
            at.setdefault(m.at, []).append((j, m))
    pending = sorted(jobs, key=lambda j: j.start)
    nxt = 0
    for now in sorted(at):
        while nxt < len(pending) and pending[nxt].start <= now:
            j = pending[nxt]
            nxt += 1
            known = [m for m in j.made if m.start is not None]
            if known:
                if known[0] is not known[-1]:
                    band.add(known[0].at, known[0].start, j.start,  # type: ignore[arg-type]
                             known[0].ahead if by_ahead else None)
                band.add(known[-1].at, known[-1].start, j.start,  # type: ignore[arg-type]
                         known[-1].ahead if by_ahead else None)
        for _, m in at[now]:
            if m.start is not None:
                b = band.band(now, Forecast(m.start), m.ahead if by_ahead else None)
                m.early, m.late = b.early, b.late


@dataclass
class Run:
    cluster: str
    workload: str
    seed: int
    policy: str
    jobs: list[JobOutcome] = field(default_factory=list)
    seconds: float = 0.0
    forecast_seconds: list[float] = field(default_factory=list)
    cut_at: float | None = None  # simulated seconds where the run was stopped (None: it ran to the end)
    recorded: str | None = None  # read from a record: the commit it was made at (None: made by this process)
    allowance: float | None = None  # the wall seconds it was allowed (None: no limit)


def record_path(folder: Path, cluster: str, workload: str, seed: int, policy: str, budget: float,
                expected: Expected = Expected()) -> Path:
    """Where a run's raw forecasts are recorded: one file per run, forecast budget and expected arrivals
    (the workload's name made safe); the allowance is in the record (:func:`usable`)."""
    safe = "".join(c if c.isalnum() or c in "-." else "_" for c in f"{cluster}_{workload}")
    tail = expected.tag if policy == "hops" else ""
    return folder / f"{safe}_s{seed}_{policy}_b{budget:g}{tail}.json"


def usable(run: Run, allowance: float | None) -> bool:
    """A recorded run stands for a run under ``allowance`` if it ran to the end (no allowance would have
    stopped it sooner) or was stopped at the same allowance."""
    return run.cut_at is None or run.allowance == allowance


def save_run(run: Run, path: Path) -> None:
    """Write ``run``'s raw forecasts (no band: :func:`replay_band` makes it again from them)."""
    data = {"cluster": run.cluster, "workload": run.workload, "seed": run.seed, "policy": run.policy,
            "seconds": run.seconds, "forecast_seconds": run.forecast_seconds, "cut_at": run.cut_at,
            "commit": run.recorded or results_header.current_commit(), "allowance": run.allowance,
            "jobs": [[j.job_id, j.submit, j.start, [[m.at, m.start, m.ahead] for m in j.made]] for j in run.jobs]}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)


def load_run(path: Path) -> Run:
    """A run written by :func:`save_run`, its band made again (:func:`replay_band`) for a Hops run."""
    d = json.loads(path.read_text())
    run = Run(d["cluster"], d["workload"], int(d["seed"]), d["policy"], seconds=float(d["seconds"]),
              forecast_seconds=[float(x) for x in d["forecast_seconds"]], cut_at=d["cut_at"],
              recorded=str(d.get("commit") or "unknown"),
              allowance=None if d.get("allowance") is None else float(d["allowance"]))
    run.jobs = [JobOutcome(str(i), float(sub), float(st), [Made(float(a), None if s is None else float(s),
                                                                  ahead=None if k is None else int(k))
                                                             for a, s, k in made])
                for i, sub, st, made in d["jobs"]]
    if run.policy == "hops":
        replay_band(run.jobs, ErrorBand(floor=ROUND))
    return run


class OutOfTime(Exception):
    """The run's wall-clock allowance is spent: it ends where it got (the jobs started by then count)."""


def simulate(cluster_name: str, workload: str, seed: int, policy_name: str, budget: float,
             allowance: float | None = None, expected: Expected = Expected()) -> Run:
    """One run of ``policy_name`` with a forecast at every round boundary (see the module docstring);
    ``allowance``: wall seconds after which the run stops at the next boundary (``Run.cut_at``);
    ``expected``: the arrivals each Hops forecast expects (:class:`Expected`)."""
    t0 = time.perf_counter()
    cluster = load_cluster(cluster_name)
    specs = load_workload(workload, seed, cluster_gpus=cluster.total_gpus)
    options = Options()
    backend = SimBackend(cluster, specs, SimSettings(costs=options.costs))
    policy = make_policy(policy_name)
    made: dict[str, list[Made]] = {}
    started: set[str] = set()
    run = Run(cluster_name, workload, seed, policy_name, allowance=allowance)
    timetable = Timetable(round_seconds=ROUND, refresh_seconds=options.refresh_seconds)
    history = ArrivalHistory(window=expected.window, horizon=expected.horizon)
    future = later_submissions(cluster, specs, options, policy_name, ROUND) if expected.oracle and policy_name == "hops" else []

    def tick(now: float) -> None:
        if allowance is not None and time.perf_counter() - t0 > allowance:
            raise OutOfTime
        views = backend.job_views(fragment=False)
        history.observe(views, now)
        started.update(v.job_id for v in views if v.current is not None)
        waiting = [v for v in views if v.current is None and v.job_id not in started]
        if not waiting:
            return
        cview = backend.cluster_view(fragment=False)
        f0 = time.perf_counter()
        if policy_name == "hops":
            out = run_forecast(policy_copy(policy), cview, views, now, timetable=timetable, budget=budget,
                               arrivals=[v for v in future if v.submit_time > now] if expected.oracle
                               else history.arrivals(now))
            starts = sorted(f.start for f in out.forecasts.values() if f.start is not None)
            for j, f in out.forecasts.items():
                if j not in started:
                    ahead = None if f.start is None else bisect.bisect_left(starts, f.start)
                    made.setdefault(j, []).append(Made(now, f.start, ahead=ahead))
        else:
            assert isinstance(policy, SlurmBackfillPolicy)
            for j, s in expected_starts(cview, views, now, policy).items():
                if j not in started:
                    made.setdefault(j, []).append(Made(now, s))
        run.forecast_seconds.append(time.perf_counter() - f0)

    try:
        run_rounds(backend, policy, LoopSettings(ROUND, options.refresh_seconds), on_round=tick)
    except OutOfTime:
        run.cut_at = backend.now()
    finally:
        backend.close()
    for rec in backend.job_records():
        if rec.start is None:
            continue
        seen = [m for m in made.get(rec.job_id, []) if rec.submit <= m.at <= rec.start]
        run.jobs.append(JobOutcome(rec.job_id, rec.submit, rec.start, seen))
    if policy_name == "hops":
        replay_band(run.jobs, ErrorBand(floor=ROUND))
    run.seconds = time.perf_counter() - t0
    return run


def errors(jobs: list[JobOutcome], which: str) -> list[float]:
    out = []
    for j in jobs:
        m: Made | None = getattr(j, which)
        if m is not None and m.start is not None and j.wait > 0:
            out.append(abs(m.start - j.start) / j.wait)
    return out


def quantile(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def banded(jobs: list[JobOutcome], which: str) -> list[tuple[Made, JobOutcome]]:
    """The forecasts with a band: each job's at submission (``first``) or every one made (``every``)."""
    pairs = [(m, j) for j in jobs for m in (j.made if which == "every" else [j.first]) if m is not None]
    return [(m, j) for m, j in pairs if m.early is not None and m.late is not None]


def covered(jobs: list[JobOutcome], which: str = "first") -> float:
    """Of the forecasts with a band (see :func:`banded`): the fraction whose job started inside it."""
    got = banded(jobs, which)
    return sum(m.early <= j.start <= m.late for m, j in got) / len(got) if got else float("nan")  # type: ignore[operator]


def width(jobs: list[JobOutcome]) -> float:
    """The median width of the band at submission of ``jobs``, as a fraction of each one's wait (at least a round)."""
    got = banded(jobs, "first")
    return statistics.median((m.late - m.early) / max(j.wait, ROUND) for m, j in got) if got else float("nan")  # type: ignore[operator]


def row(run: Run) -> str:
    waited = [j for j in run.jobs if j.wait >= ROUND]
    short = [j for j in run.jobs if j.wait < ROUND]
    sub, bef = errors(waited, "first"), errors(waited, "before")
    unknown = sum(1 for j in waited if j.first is None or j.first.start is None)
    short_err = errors(short, "first")
    fs = run.forecast_seconds
    med = statistics.median
    return (f"| {run.cluster} {run.workload} | {run.seed} | {run.policy} | {len(run.jobs)} | {len(waited)} | {unknown} | "
            f"{med(sub) if sub else float('nan'):.2f} | {quantile(sub, 0.9):.2f} | "
            f"{med(bef) if bef else float('nan'):.2f} | {quantile(bef, 0.9):.2f} | "
            f"{_band(run)} | {len(short)} | "
            f"{(med([e * j.wait for e, j in zip(short_err, short)]) if short_err else float('nan')):.0f} | "
            f"{(max(fs) if fs else 0):.1f} | {sum(fs):.0f} | {run.seconds:.0f} | "
            f"{'to the end' if run.cut_at is None else f'{run.cut_at / 3600:.1f} h'}"
            f"{'' if run.recorded is None else f', recorded at {run.recorded}'} |")


def _band(run: Run) -> str:
    """The band columns: coverage at submission of all jobs, of those that waited a round, of every
    forecast made; the median width at submission relative to the wait."""
    if run.policy != "hops":
        return "| | |"
    waited = [j for j in run.jobs if j.wait >= ROUND]
    return (f"{covered(run.jobs):.2f} | {covered(waited):.2f} | {covered(run.jobs, 'every'):.2f} | "
            f"{width(waited):.2f}")


def _med_p90(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f} ({quantile(xs, 0.9):.2f})" if xs else "-"


def targets(runs: list[Run]) -> list[str]:
    """The per-target table: one row per Hops run, each target met or missed, beside Slurm's run of the same
    workload and seed (on the jobs that waited at least a round under both, too)."""
    out = ["| run | seed | waited >= 1 round | Hops at submission: median (p90) | <= 0.25 | one round before | "
           "<= 0.10 | Slurm at submission | Hops below Slurm | waited under both | Hops on those | Slurm on those | "
           "waited < 1 round: Hops's median error (s) |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    verdict = lambda ok: "met" if ok else "**missed**"  # noqa: E731
    for r in runs:
        if r.policy != "hops":
            continue
        waited = [j for j in r.jobs if j.wait >= ROUND]
        short = [j for j in r.jobs if j.wait < ROUND]
        sub, bef = errors(waited, "first"), errors(waited, "before")
        other = _slurm_of(r, runs)
        slurm = [] if other is None else errors([j for j in other.jobs if j.wait >= ROUND], "first")
        ok_sub, ok_bef, ok_slurm = _held(r, runs)
        both: set[str] = set()
        h: list[float] = []
        o: list[float] = []
        if other is not None:
            both = {j.job_id for j in waited} & {j.job_id for j in other.jobs if j.wait >= ROUND}
            h = errors([j for j in r.jobs if j.job_id in both], "first")
            o = errors([j for j in other.jobs if j.job_id in both], "first")
        med = lambda xs: statistics.median(xs) if xs else float("nan")  # noqa: E731
        short_s = [abs(m.start - j.start) for j in short if (m := j.first) is not None and m.start is not None]
        out.append(f"| {r.cluster} {r.workload} | {r.seed} | {len(waited)} | {_med_p90(sub)} | "
                   f"{verdict(ok_sub)} | {_med_p90(bef)} | {verdict(ok_bef)} | {_med_p90(slurm)} | "
                   f"{verdict(ok_slurm)} | {len(both)} | {_med_p90(h)} | {_med_p90(o)} | "
                   f"{len(short)} jobs, {f'{med(short_s):.0f}' if short_s else '-'} |")
    return out


def _slurm_of(r: Run, runs: list[Run]) -> Run | None:
    """Slurm's run of the same cluster, workload and seed as ``r``."""
    return next((x for x in runs if x.policy != "hops" and (x.cluster, x.workload, x.seed)
                 == (r.cluster, r.workload, r.seed)), None)


def _held(r: Run, runs: list[Run]) -> tuple[bool, bool, bool]:
    """Hops run ``r``'s three targets: median at submission <= 0.25, one round before <= 0.10, below Slurm's."""
    waited = [j for j in r.jobs if j.wait >= ROUND]
    sub, bef = errors(waited, "first"), errors(waited, "before")
    other = _slurm_of(r, runs)
    slurm = [] if other is None else errors([j for j in other.jobs if j.wait >= ROUND], "first")
    med = lambda xs: statistics.median(xs) if xs else float("nan")  # noqa: E731
    return med(sub) <= 0.25, med(bef) <= 0.10, med(sub) < med(slurm)


def summary(runs: list[Run]) -> str:
    """One line: on how many Hops runs each target holds, and the band's coverage on the jobs that waited."""
    hops = [r for r in runs if r.policy == "hops"]
    held = [_held(r, runs) for r in hops]
    met = [sum(1 for h in held if h[k]) for k in range(3)]
    waited = [covered([j for j in r.jobs if j.wait >= ROUND]) for r in hops]
    return (f"What holds on these {len(hops)} Hops runs: median at submission <= 0.25 on {met[0]}, one round before "
            f"<= 0.10 on {met[1]}, below Slurm's on {met[2]}; the band held the start of "
            f"{' / '.join(f'{c:.2f}' for c in waited)} of the jobs that waited a round (nominal 0.80), "
            f"{' / '.join(f'{width([j for j in r.jobs if j.wait >= ROUND]):.2f}' for r in hops)} of their wait wide.")


def plot(runs: list[Run], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 5), sharex=True, sharey=True)
    colours = {"hops": "tab:blue", "slurm-backfill": "tab:red"}
    markers = {"paper": "o", "gavel": "^"}
    for ax, which, title in ((axes[0], "first", "forecast at submission"), (axes[1], "before", "one round before")):
        for run in sorted(runs, key=lambda r: r.policy == "hops"):  # Hops's on top
            pts = [(j.wait / 3600, max((getattr(j, which).start - j.submit) / 3600, 0.01)) for j in run.jobs
                   if j.wait >= ROUND and getattr(j, which) is not None and getattr(j, which).start is not None]
            if pts:
                ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=9, alpha=0.6, color=colours.get(run.policy),
                           marker=markers.get(run.workload.split(":")[0], "s"), zorder=3 if run.policy == "hops" else 2,
                           label=f"{run.policy} ({run.cluster} {run.workload} s{run.seed})")
        ax.plot([0.1, 100], [0.1, 100], color="grey", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(title)
        ax.set_xlabel("actual wait (h)")
        ax.set_ylabel("forecast wait (h)")
    handles, labels = axes[0].get_legend_handles_labels()
    uniq = dict(zip(labels, handles))
    fig.legend(uniq.values(), uniq.keys(), loc="lower center", ncol=2, fontsize=7)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def parse_runs(spec: str) -> list[tuple[str, str, list[int]]]:
    out = []
    for part in spec.split(";"):
        if not part.strip():
            continue
        cluster, workload, seeds = part.strip().split(":", 2)
        out.append((cluster, workload, [int(s) for s in seeds.split(",") if s.strip()]))
    return out


def run(out_dir: Path) -> Path:
    if os.environ.get("HOPS_BENCH_PARTS", "") == "scale":
        return forecast_scale.run(out_dir)
    spec = os.environ.get("HOPS_BENCH_FORECAST", DEFAULT_RUNS)
    budget = float(os.environ.get("HOPS_BENCH_FORECAST_BUDGET", "20"))
    allowance = float(os.environ["HOPS_BENCH_FORECAST_ALLOWANCE"]) if os.environ.get("HOPS_BENCH_FORECAST_ALLOWANCE") else None
    folder = Path(os.environ["HOPS_BENCH_FORECAST_RECORDS"]) if os.environ.get("HOPS_BENCH_FORECAST_RECORDS") else None
    expected = Expected.parse(os.environ.get("HOPS_BENCH_FORECAST_ARRIVALS", f"{ARRIVALS:g}"))
    beside = [Expected.parse(t) for t in os.environ.get("HOPS_BENCH_FORECAST_BESIDE", "").split(",") if t.strip()]
    results_header.current_commit()  # read once per process: the commit the runs are made at, not the one at their end

    def one(c: str, w: str, s: int, p: str, e: Expected) -> Run:
        path = None if folder is None else record_path(folder, c, w, s, p, budget, e)
        if path is not None and path.exists() and usable(got := load_run(path), allowance):
            return got
        made = simulate(c, w, s, p, budget, allowance, e)
        if path is not None:
            save_run(made, path)
        return made

    runs = [one(c, w, s, p, expected) for c, w, seeds in parse_runs(spec) for s in seeds
            for p in ("hops", "slurm-backfill")]
    others = [(e, [one(c, w, s, "hops", e) for c, w, seeds in parse_runs(spec) for s in seeds])
              for e in beside if e != expected]
    return write(out_dir, runs, spec, budget, allowance, [(expected, [r for r in runs if r.policy == "hops"]), *others])


def write(out_dir: Path, runs: list[Run], spec: str, budget: float, allowance: float | None,
          expecting: list[tuple[Expected, list[Run]]] | None = None) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    plot(runs, out_dir / "forecast" / "forecast-vs-actual.png")
    cmd = command(os.environ)
    lines = ["# Forecast accuracy in the simulator: Hops's forecast and Slurm's expected start", "",
             f"Command: `{cmd}`.", "",
             "Hops: at every round boundary the round loop is run forward from the state then, in the simulator, "
             "with a copy of the policy (`hops_slurm/sim/forecast_run.py`, what the daemon's forecast worker "
             "runs), on the estimates the round plans with. Slurm: `squeue --start` under the simulator's Slurm "
             "backfill policy (`planner/slurm_start.py`: every pending job in priority order gets the earliest "
             "start at which its request fits for its whole time limit). Each against its own run's actual "
             "(first) starts. Error = |forecast - actual start| / actual wait.", "",
             "| run | seed | scheduler | jobs | waited >= 1 round | no forecast | median at submission | "
             "p90 at submission | median one round before | p90 one round before | band coverage at submission | "
             "of those that waited a round | of every forecast | band width / wait (those that waited) | "
             "waited < 1 round | their median error (s) | slowest forecast (s) | forecasting (s) | wall (s) | simulated |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += [row(r) for r in runs]
    lines += ["", "Targets (issue 35), per run: error as a fraction of the actual wait over the jobs that waited "
              "at least a round (the others apart, in seconds, last column); Slurm's on its own run of the same "
              "workload and seed, and on the jobs that waited a round under both.", ""] + targets(runs)
    lines += ["", summary(runs)]
    cut = [r for r in runs if r.cut_at is not None]
    if cut:
        lines += ["", "**Not run to the end** (stopped at the allowance, the jobs started by then count): " + "; ".join(
            f"{r.cluster} {r.workload} seed {r.seed} {r.policy} at {(r.cut_at or 0.0) / 3600:.1f} h simulated, {len(r.jobs)} jobs "
            f"started, {r.seconds:.0f} s wall of which {sum(r.forecast_seconds):.0f} s forecasting" for r in cut) + "."]
    lines += ["", "![forecast vs actual wait](forecast/forecast-vs-actual.png)", "",
              "\"At submission\": the first forecast made after the job's submission (the first round boundary "
              "after it, what the daemon publishes first); \"one round before\": the last one made at least one "
              "round before its start. \"Band coverage at submission\": of Hops's forecasts at submission that have a band, "
              "the fraction whose job started inside it (nominal 0.8: the band is the 10th to 90th percentile of the "
              "relative errors measured so far in the forecast's horizon class: a start now, later within the round, "
              "1-3, 3-10, 10-30 rounds ahead, later; its levels follow the coverage seen so far, and it always holds "
              "the start it names; `planner/forecast.py`); then the "
              "same over the jobs that waited at least a round (a selection by outcome: those a forecast of an "
              "immediate start missed are all in it), and over every forecast made at every boundary. \"Band "
              "width / wait\": over the jobs that waited at least a round, the median of the band's width at "
              "submission over the job's wait. \"Forecasting\": the run's wall seconds spent forecasting (the "
              "rest is the run itself). \"No forecast\": jobs that waited but got no start within the "
              "forecast's budget or horizon. A run stopped at its allowance (\"simulated\" says how far it got, "
              "else \"to the end\") counts only the jobs started by then: the longest waits of that workload "
              "are not in it. \"Recorded at\": the run's forecasts were read from its record "
              "(`HOPS_BENCH_FORECAST_RECORDS`), made at that commit; the band and every column are made again from "
              "them here. The band starts each run from nothing (the prior until 20 jobs have started, at least the prior in a horizon class until 20 of its own), "
              "as a daemon does on its first day. Targets (issue 35): Hops's median at submission <= 0.25, one round "
              "before <= 0.10, and below Slurm's."]
    if expecting is not None and len(expecting) > 1:
        lines += ["", *made_of(expecting)]
    return results_header.write(out_dir / "forecast.md", "\n".join(lines) + "\n",
                                generator=f"{__name__}:run", command=cmd)


def made_of(expecting: list[tuple[Expected, list[Run]]]) -> list[str]:
    """The section that splits the error: the same Hops runs, each forecast expecting other arrivals."""
    lines = ["## What the error is made of", "",
             "The same runs (the run itself never depends on its forecasts: they plan with a copy of the policy), "
             "each Hops forecast expecting other arrivals (`HOPS_BENCH_FORECAST_ARRIVALS`, "
             "`HOPS_BENCH_FORECAST_BESIDE`; `hops_slurm/tools/bench/forecast_expected.py`). \"The run's later "
             "submissions\" gives each forecast every job submitted after it, as the round after its submission "
             "saw it: no daemon knows them, so its error is what the forecast gets wrong by itself (estimates, "
             "the timetable); the rest of the error of the default is the later jobs. \"The last W s again\" is "
             "what `[engine] forecast_arrivals = W` does. Signed: the median of (forecast - actual) / wait "
             "(below 0: early).", "",
             "| run | seed | the forecast expects | waited >= 1 round | median at submission (p90) | signed | "
             "one round before (p90) | <= 0.25 | made at |",
             "|---|---|---|---|---|---|---|---|---|"]
    held: list[str] = []
    for e, runs in expecting:
        met = 0
        for r in runs:
            waited = [j for j in r.jobs if j.wait >= ROUND]
            sub, bef = errors(waited, "first"), errors(waited, "before")
            signed = [(j.first.start - j.start) / j.wait for j in waited
                      if j.first is not None and j.first.start is not None]
            med = statistics.median(sub) if sub else float("nan")
            lines.append(f"| {r.cluster} {r.workload} | {r.seed} | {e.label} | {len(waited)} | {med:.2f} "
                         f"({quantile(sub, 0.9):.2f}) | {statistics.median(signed) if signed else float('nan'):+.2f} | "
                         f"{statistics.median(bef) if bef else float('nan'):.2f} ({quantile(bef, 0.9):.2f}) | "
                         f"{'met' if med <= 0.25 else '**missed**'} | {r.recorded or 'this run'} |")
            met += med <= 0.25
        held.append(f"{e.label}: {met} of {len(runs)}")
    lines += ["", "Median at submission <= 0.25 (issue 35's target), runs: " + "; ".join(held) + "."]
    return lines
