"""The load benchmark's pieces that need no cluster: its helpers and its place outside ``bench all``."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from types import ModuleType

import pytest

from hops_slurm.tools.bench import discover, load
from hops_slurm.cli import bench_cmd as cli_bench


def test_load_benchmark_is_found_but_left_out_of_all(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert "load" in discover()
    ran: list[str] = []

    def fake(name: str, in_all: bool) -> ModuleType:
        module = ModuleType(name)
        module.NAME = name  # type: ignore[attr-defined]
        module.IN_ALL = in_all  # type: ignore[attr-defined]

        def run(out: Path) -> Path:
            ran.append(name)
            return out / f"{name}.md"
        module.run = run  # type: ignore[attr-defined]
        return module

    monkeypatch.setattr(cli_bench, "discover", lambda: {"quick": fake("quick", True), "long": fake("long", False)})
    cli_bench._run(argparse.Namespace(name="all", out=tmp_path))
    assert ran == ["quick"]
    cli_bench._run(argparse.Namespace(name="long", out=tmp_path))
    assert ran == ["quick", "long"]


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert load.percentile(values, 0.99) == 99.0
    assert load.percentile(values, 0.5) == 50.0
    assert load.percentile([7.0], 0.99) == 7.0
    assert load.percentile(list(reversed(values)), 1.0) == 100.0
    assert math.isnan(load.percentile([], 0.5))


def test_peak_rss_reads_vmhwm_and_reset_lowers_it() -> None:
    load.reset_peak_rss()  # the peak of earlier tests in this process may lie far above the RSS now
    before = load.peak_rss_mib()
    assert before > 1
    blob = bytearray(64 * 1024 * 1024)  # touch 64 MiB
    for i in range(0, len(blob), 4096):
        blob[i] = 1
    grown = load.peak_rss_mib()
    assert grown >= before + 48
    del blob
    load.reset_peak_rss()
    assert load.peak_rss_mib() < grown


def test_submit_rpc_times_are_read_for_the_given_jobs_only(tmp_path: Path) -> None:
    log = tmp_path / "slurmctld.log"
    log.write_text(
        "[2026-11-23T08:00:00.001] _slurm_rpc_submit_batch_job: JobId=11 InitPrio=1 usec=1500\n"
        "[2026-11-23T08:00:00.002] sched: something else usec=99999\n"
        "[2026-11-23T08:00:00.003] _slurm_rpc_submit_batch_job: JobId=12 InitPrio=0 usec=250\n"
        "[2026-11-23T08:00:00.004] _slurm_rpc_submit_batch_job: JobId=13 InitPrio=0 usec=9000\n")
    assert load._rpc_usec(log, {"11", "12"}) == [1.5, 0.25]


def test_slurm_processes_counts_the_cli_backends_commands_through_the_retry_wrapper() -> None:
    from collections import Counter

    from hops_slurm.tools.bench.engine_bench import slurm_processes
    from hops_slurm.engine.retry import RetryingReads

    class Cli:
        calls = Counter({"squeue": 2, "scontrol hold": 1, "scontrol create reservation": 4})

    class Engine:
        api = RetryingReads(Cli())  # type: ignore[arg-type]

    assert slurm_processes(Engine()) == 7  # type: ignore[arg-type]
    Engine.api = object()  # type: ignore[assignment]  # a backend that runs no processes
    assert slurm_processes(Engine()) == 0  # type: ignore[arg-type]


def test_refresh_step_seconds_are_read_from_the_engines_histogram_per_cycle() -> None:
    from hops_slurm.engine.exporter import EngineMetrics

    metrics = EngineMetrics()
    assert load.step_seconds(metrics.registry, "refresh") == {}
    metrics.step("refresh", "read", 1.5)
    metrics.step("refresh", "read", 0.25)
    metrics.step("refresh", "ages", 0.5)
    metrics.step("round", "read", 9.0)  # another cycle's step of the same name
    before = load.step_seconds(metrics.registry, "refresh")
    assert before == {"read": 1.75, "ages": 0.5}
    metrics.step("refresh", "ages", 2.0)
    after = load.step_seconds(metrics.registry, "refresh")
    assert {k: v - before.get(k, 0.0) for k, v in after.items()} == {"read": 0.0, "ages": 2.0}


def test_step_table_has_a_row_per_step_that_ran_in_the_cycles_order() -> None:
    table = load.step_table([{"ages": 0.5, "read": 1.0}, {"read": 2.0}], ["read", "gate", "ages"])
    assert table == ["| refresh step | round 1 | round 2 |", "|---|---|---|",
                     "| read | 1.00 | 2.00 |", "| ages | 0.50 | 0.00 |"]
    assert load.step_table([], ["read"]) == []


def test_cpu_seconds_grow_with_work_and_count_children_once_waited() -> None:
    import subprocess
    import sys

    before = load.cpu_seconds()
    deadline = load.cpu_seconds() + 0.05
    while load.cpu_seconds() < deadline:  # spin until the kernel has counted 50 ms more of this process
        pass
    assert load.cpu_seconds() >= before + 0.05
    waited = load.children_cpu_seconds()
    # the child spins 0.1 s of its own CPU time and the check asks for 0.05 s: CPU time is counted in clock
    # ticks (10 ms), and a child that stopped at exactly 0.05 s once failed the check by float rounding
    # (196.98 >= 196.93 + 0.05)
    subprocess.run([sys.executable, "-c", "import os, time\nt = os.times()\nwhile sum(os.times()[:2]) < sum(t[:2]) + 0.1: pass"],
                   check=True)
    assert load.children_cpu_seconds() >= waited + 0.05
