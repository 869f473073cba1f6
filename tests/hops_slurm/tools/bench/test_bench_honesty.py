"""The honesty bench's workload changes and its table when runs are missing (the runs themselves are
the benchmark, not a test)."""

from pathlib import Path

from hops_slurm.tools.bench.honesty_bench import SCENARIOS, changed_users, declare, table
from hops_slurm.sim.workload import load_workload


def test_the_first_users_by_name_understate_and_nothing_else_changes() -> None:
    jobs = load_workload("gavel:jobs=40", 0)
    users = changed_users(jobs, 0.3)
    assert users == set(sorted({j.user for j in jobs})[:3])
    changed = declare(jobs, users, 100.0)
    for old, new in zip(jobs, changed):
        assert new.total_samples == old.total_samples and new.arrival == old.arrival
        # as the job's #HOPS line states it: a whole number of samples (hops_slurm.sim.workload.declared_count)
        assert new.declared == round(old.total_samples / 100.0 if old.user in users else old.total_samples)
    assert changed_users(jobs, 0.0) == set()
    assert {s.tag for s in SCENARIOS} >= {"honest", "liars-10-100-on", "liars-30-10-off", "over-30-10-on"}


def test_missing_runs_are_reported_as_not_run(tmp_path: Path) -> None:
    assert "Not run" in "\n".join(table(tmp_path, "paper-512"))
