"""tools.bench.forecast_expected: what the accuracy bench's forecasts expect to arrive, read from its variable;
the oracle's arrivals are every job of the run, fresh at its submission."""

from __future__ import annotations

from pathlib import Path

import pytest

from hops_slurm.errors import HopsError
from hops_slurm.sim.cluster_spec import load_cluster
from hops_slurm.sim.forecast_arrivals import MARK
from hops_slurm.sim.runner import Options
from hops_slurm.sim.workload import load_workload
from hops_slurm.tools.bench.forecast_bench import record_path
from hops_slurm.tools.bench.forecast_expected import Expected, later_submissions


def test_the_expected_arrivals_are_read_from_the_variable_and_name_their_record(tmp_path: Path) -> None:
    assert Expected.parse("0") == Expected() and Expected().tag == ""
    assert Expected.parse("3600") == Expected(3600.0) and Expected(3600.0).tag == "_a3600"
    assert Expected.parse("3600:10800").tag == "_a3600h10800"
    assert Expected.parse("oracle").oracle and Expected.parse("oracle").tag == "_oracle"
    for bad in ("an hour", "-5", "1:2:3", "1e9"):
        with pytest.raises(HopsError, match="HOPS_BENCH_FORECAST_ARRIVALS"):
            Expected.parse(bad)
    # the record of a Hops run names what it expected; Slurm's expected start has no arrivals to expect
    assert record_path(tmp_path, "c", "w", 0, "hops", 20.0, Expected(oracle=True)).name == "c_w_s0_hops_b20_oracle.json"
    assert record_path(tmp_path, "c", "w", 0, "slurm-backfill", 20.0, Expected(oracle=True)).name == \
        "c_w_s0_slurm-backfill_b20.json"


def test_the_oracle_knows_every_job_of_the_run_fresh_at_its_submission() -> None:
    cluster = load_cluster("paper-64")
    specs = load_workload("gavel:jobs=6,rate=6", 0, cluster_gpus=cluster.total_gpus)
    got = later_submissions(cluster, specs, Options(), "hops", 360.0)
    assert sorted(v.job_id for v in got) == sorted(f"{s.job_id}{MARK}0" for s in specs)
    by_id = {s.job_id: s for s in specs}
    for v in got:
        spec = by_id[v.job_id.split(MARK)[0]]
        assert v.submit_time == pytest.approx(spec.arrival) and v.requirements == spec.requirements
        assert v.current is None and v.wait == 0.0 and v.done_samples == 0.0 and v.preemptions == 0
    assert [v.submit_time for v in got] == sorted(v.submit_time for v in got)
