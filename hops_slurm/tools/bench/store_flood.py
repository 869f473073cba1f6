"""Benchmark ``store-flood`` (issue 24): what a job flooding its runtime file leaves in the store, and what
the engine's refresh costs meanwhile.

Data flow: runtime records as a hostile job's recorder would write them (valid, within every bound:
:class:`profiler.records.RuntimeRecord`) -> the job's own place -> the engine's ingest
(:func:`hops_slurm.engine.runtime_records.ingest_job`, real :class:`~hops_slurm.engine.state.EngineState`
and :class:`~estimator.store.ThroughputStore` in a temporary folder, durable as the engine keeps them) ->
(1) the store's rows and bytes after a simulated day of 30 s refreshes (the flood test's stream, which
``tests/hops_slurm/engine/test_record_limits.py`` bounds) and (2) the time one refresh spends on a job that
appends 1 MiB of the largest legal lines (64 KiB) every refresh (what the engine reads per job), for one
job and for 16 jobs of one user -> ``docs/results/store-flood.md``. Measures; asserts nothing.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path

from estimator.store import ThroughputStore
from hops_slurm.tools.bench.machine import load, machine_line
from hops_slurm.engine import record_limits
from hops_slurm.engine.record_limits import RefreshBudget
from hops_slurm.engine.runtime_records import MAX_LINE, MAX_READ, RUNTIME_FILE, ingest_job
from hops_slurm.engine.state import EngineState, JobState
from hops_slurm.engine.userfiles import Owner, make_place
from profiler.records import RuntimeRecord
from hops_slurm.tools import results_header

NAME = "store-flood"
#: the environment variables this benchmark reads (they precede the command in its results header)
ENV = ()


def command(env: Mapping[str, str]) -> str:
    """The command that reruns this benchmark as it runs under ``env`` (its results header)."""
    return results_header.bench_command(NAME, ENV, env)


T0 = 1_767_225_600.0
SIG = "bench/flood"
TYPES = {"n1": "a100"}


def _line(job_run: float, *, rank: int, window: float, values: int) -> str:
    return RuntimeRecord(signature=SIG, gpu_type="a100", node="n1", rank=rank, gpus=8, nodes=1, batch_size=1, steps=1,
                         window_seconds=window, throughput=8 / window, data_times=[0.25] * values,
                         sync_waits=[0.5] * values, step_times=[0.125] * min(values, 1000),
                         measured_at=datetime.fromtimestamp(T0 + job_run, tz=timezone.utc)).model_dump_json() + "\n"


def _job(job_id: str) -> JobState:
    js = JobState(job_id=job_id, name="flood", user="bench", directives="", submit_time=T0, first_seen=T0, last_seen=T0,
                  last_state="RUNNING", config={"n1": 8}, signature=SIG)
    js.placements = [{"start": T0, "end": None, "config": {"n1": 8}}]
    return js


class _Bench:
    def __init__(self, folder: Path) -> None:
        self.owner = Owner("bench", os.getuid(), os.getgid())
        self.root = folder / "metrics"
        self.state = EngineState(folder / "engine.sqlite")
        self.path = folder / "store.sqlite"
        self.store = ThroughputStore(self.path)

    def append(self, js: JobState, text: str) -> None:
        with open(make_place(self.root, js.job_id, self.owner) / RUNTIME_FILE, "a", encoding="utf-8") as fh:
            fh.write(text)

    def close(self) -> None:
        self.store.close()
        self.state.close()


def _day(folder: Path) -> dict[str, object]:
    """The flood test's stream for a simulated day: rows, bytes, and the time per refresh."""
    b = _Bench(folder)
    js = _job("1")
    took = []
    for _ in range(2880):
        js.run_time += 30.0
        js.gpu_seconds += 240.0
        b.append(js, "".join(_line(js.run_time, rank=k % 8, window=5.0, values=record_limits.STORED_SAMPLES)
                             for k in range(6)))
        start = time.perf_counter()
        ingest_job(b.store, b.state, b.root, js, TYPES, b.owner.uid)
        took.append(time.perf_counter() - start)
    rows = b.store.row_counts()
    wal = b.path.with_name(b.path.name + "-wal")
    out = {"rows": rows, "bytes": b.path.stat().st_size, "wal": wal.stat().st_size if wal.exists() else 0,
           "stored": b.store.record_counts(SIG)["type_aggregated"], "took": took}
    b.close()
    return out


def _mib(folder: Path, jobs: int, refreshes: int = 30) -> list[float]:
    """Seconds per refresh while ``jobs`` jobs of one user each append 1 MiB of 64 KiB lines per refresh."""
    b = _Bench(folder)
    states = [_job(str(i + 1)) for i in range(jobs)]
    values = 1
    while len(_line(600.0, rank=0, window=0.01, values=values * 2)) <= MAX_LINE:
        values *= 2
    line_of = len(_line(600.0, rank=0, window=0.01, values=values))
    per_refresh = max(1, MAX_READ // line_of)
    took = []
    for r in range(refreshes):
        budget = RefreshBudget()
        for js in states:
            js.run_time = js.run_time + 30.0 if r else 86400.0  # a job a day old: its budget in all is not the limit
            js.gpu_seconds = js.run_time * 8
            b.append(js, _line(js.run_time, rank=1, window=0.01, values=values) * per_refresh)
        start = time.perf_counter()
        for js in states:
            ingest_job(b.store, b.state, b.root, js, TYPES, b.owner.uid, budget)
        took.append(time.perf_counter() - start)
    b.close()
    return took


def run(out_dir: Path) -> Path:
    before = load()
    with tempfile.TemporaryDirectory(prefix="hops-bench-flood-") as tmp:
        day = _day(Path(tmp) / "day")
        one = _mib(Path(tmp) / "one", 1)
        many = _mib(Path(tmp) / "many", 16)
    rows: dict[str, int] = day["rows"]  # type: ignore[assignment]
    took: list[float] = day["took"]  # type: ignore[assignment]

    def ms(xs: list[float]) -> str:
        return f"{1000 * statistics.median(xs):.1f} / {1000 * max(xs):.1f}"

    text = [
        "# The store under a flood of runtime records (issue 24)",
        "",
        "Written by `hops-slurm bench store-flood` (hops_slurm/tools/bench/store_flood.py). Records a hostile job's recorder",
        "could write, each valid and within every bound, go through the engine's ingest (`ingest_job`) into a real",
        "store; docs/security.md states the bound, `tests/hops_slurm/engine/test_record_limits.py` checks it.",
        "",
        "## A day of the worst legal flood, one job",
        "",
        "A job on 8 GPUs appends 6 records every 30 s refresh for a day (2880 refreshes), from its 8 ranks, each",
        f"with {record_limits.STORED_SAMPLES} data times and sync waits (the most a stored record keeps): twice what its run time",
        f"earns (`RECORDS_BURST` {record_limits.RECORDS_BURST} + one per {record_limits.RECORD_INTERVAL:g} s run).",
        "",
        "| After the day | |",
        "|---|---|",
        f"| records stored (the rest counted for the job's progress only) | {day['stored']} of {6 * 2880} |",
        f"| rows in the store | {sum(rows.values())} (samples {rows.get('samples', 0)}, measured aggregates "
        f"{sum(rows.get(t, 0) for t in ('type_aggregated', 'type_distributed', 'entity_aggregated', 'entity_distributed'))}) |",
        f"| store file | {day['bytes'] / 2**20:.2f} MiB |",
        f"| its WAL | {int(day['wal']) / 2**20:.2f} MiB (SQLite checkpoints at 1000 pages) |",
        f"| ingest per refresh, median / max | {ms(took)} ms |",
        "",
        "Before the bounds (issue 24, on 5268481) the same engine grew the store by 2-12 MB per refresh of such a job:",
        "about 35 GB a day.",
        "",
        "## 1 MiB per refresh: the engine's refresh time under the flood",
        "",
        "Each job appends, every refresh, 1 MiB of the largest legal lines (64 KiB records: the most the engine reads",
        "of one job per refresh); the time is the ingest of all of them in one refresh (parse, check, store within",
        f"the budgets: {record_limits.RECORDS_PER_REFRESH} records per job, {record_limits.USER_RECORDS_PER_REFRESH} per user), 30 refreshes.",
        "",
        "| Jobs of one user flooding | Ingest per refresh, median / max (ms) |",
        "|---|---|",
        f"| 1 | {ms(one)} |",
        f"| 16 | {ms(many)} |",
        "",
        machine_line(before),
    ]
    path = out_dir / "store-flood.md"
    return results_header.write(path, "\n".join(text) + "\n", generator=f"{__name__}:run",
                                 command=command(os.environ))
