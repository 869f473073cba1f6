"""How often a placing round asks Slurm, on the live minicluster: the job listing (``squeue`` on 22.05,
``scontrol show job`` from 23.02 on) is read at most twice in a round that places a job (the round's
snapshot and one re-read after enactment).

Counted in the adapter (:attr:`hops_slurm.slurm.cli.CliSlurm.calls`, every client command by what it does).
``pytest -s`` prints the counts of the measured round (docs/results/engine-core.md quotes them).
"""

from __future__ import annotations

import time

import pytest

from hops_slurm.config import load_config
from hops_slurm.engine.engine import Engine
from hops_slurm.slurm.cli import CliSlurm

pytestmark = pytest.mark.slurm


def test_a_placing_round_reads_the_job_listing_at_most_twice(eng) -> None:  # noqa: ANN001
    api = CliSlurm(eng.cluster.env())
    job = eng.submit(gpus="1,2")
    with Engine(load_config(eng.config), api=api, env=eng.env) as engine:
        deadline = time.monotonic() + 180
        while job not in {js.job_id for js in engine.schedulable()}:
            assert time.monotonic() < deadline, f"job {job} not schedulable: {eng.describe()}"
            engine.refresh()  # holds it; measured in place, or probed (not the measured round)
            time.sleep(1.0)
        api.calls.clear()
        planning = engine.full_round()
        counts = dict(sorted(api.calls.items()))
    print(f"\nSlurm {api.dialect.release}: client commands in one placing round: {counts}")
    assert planning is not None and job in planning.plan.placed(), eng.describe()
    assert planning.enactment is not None and job in planning.enactment.started
    assert counts.get(api.listing_label(), 0) <= 2, f"job listing read {counts.get(api.listing_label())} times: {counts}"


#: the commands that change Slurm (the rest are listings)
MUTATING = ("scontrol hold", "scontrol release", "scontrol requeuehold", "scontrol update", "scontrol create",
            "scontrol delete")


def test_a_placing_round_changes_slurm_in_one_process_per_phase(eng) -> None:  # noqa: ANN001
    """Several jobs placed in one round: their reservations, placements, release, detach and reservation
    deletes are one client process each (the per-job changes one ``scontrol`` reading them from its
    standard input: hops_slurm.slurm.batch.run_each), however many jobs the round places."""
    api = CliSlurm(eng.cluster.env())
    jobs = [eng.submit(gpus="1") for _ in range(4)]
    with Engine(load_config(eng.config), api=api, env=eng.env) as engine:
        deadline = time.monotonic() + 240
        while not set(jobs) <= {js.job_id for js in engine.schedulable()}:
            assert time.monotonic() < deadline, f"jobs {jobs} not schedulable: {eng.describe()}"
            engine.refresh()
            time.sleep(1.0)
        api.calls.clear()
        planning = engine.full_round()
        counts = dict(sorted(api.calls.items()))
    print(f"\nSlurm {api.dialect.release}: client commands in one round placing {len(jobs)} jobs: {counts}")
    assert planning is not None and planning.enactment is not None, eng.describe()
    started = [j for j in jobs if j in planning.enactment.started]
    assert len(started) >= 3, (planning.enactment, eng.describe())
    mutating = {k: v for k, v in counts.items() if k.startswith(MUTATING)}
    assert mutating and all(v == 1 for v in mutating.values()), counts
    assert "scontrol create reservation (stdin)" in mutating and "scontrol update (stdin)" in mutating, counts
    assert "scontrol create reservation" not in counts, counts
