"""Enactment on the live minicluster: exact placement (one node, two nodes even and uneven), the job's
environment, the owner-release gate, preemption and resume on a new config, kept configs."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from hops_slurm.journal import Journal
from hops_slurm.tools.minicluster.cluster import Minicluster
from hops_slurm.slurm.cli import CliSlurm
from hops_slurm.slurm.enact import ENACT_PHASES, GATE, Enactor, job_reservation, placement_fields, read_job_env

pytestmark = pytest.mark.slurm


@pytest.fixture
def enactor(api: CliSlurm, tmp_path: Path) -> Enactor:
    return Enactor(api, Journal(tmp_path / "journal.db"), env_dir=tmp_path / "jobenv", settle_timeout=15.0)


class PhaseRecorder:
    """A timer (planner.stages.StageTimer) that records the phases it times, and fails on one inside another."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.depth = 0

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        assert self.depth == 0, f"phase {name} inside another"
        self.names.append(name)
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1


def hops_reservations(api: CliSlurm) -> set[str]:
    return {r.name for r in api.reservations() if r.name.startswith("hops-")}


def test_jobs_land_on_exactly_the_planned_nodes_and_gpus(api: CliSlurm, enactor: Enactor, submit, workdir: Path) -> None:  # noqa: ANN001
    # a child process (sh -c) must see the variables: the env file exports them
    body = ("sh -c 'echo \"$HOPS_GPUS $HOPS_LR $HOPS_PLACEMENT $HOPS_CONFIG $HOPS_RECORDER\"' > hops-$SLURM_JOB_ID.out;"
            " sleep 300")
    body = f'. "{enactor.env_dir}/$SLURM_JOB_ID.env"; {body}'
    one, two_even, two_uneven = submit(body), submit(body), submit(body)
    plan = {
        one: {"a100-2": 3},
        two_even: {"a100-1": 2, "a100-2": 2},
        two_uneven: {"v100-1": 3, "v100-2": 1},
    }
    result = enactor.apply(plan, job_env={j: {"HOPS_RECORDER": "/tmp/rec.db"} for j in plan}, round_id="r1")
    assert sorted(result.started) == sorted(plan) and not result.refused and not result.mismatched
    assert sorted(result.verified) == sorted(plan)
    for job_id, config in plan.items():
        job = api.job(job_id)
        assert job is not None and job.state == "RUNNING"
        assert job.gpu_config() == config
        assert job.reservation == ""  # detached once verified
        rec = enactor.journal.allocations(job_id)[-1]
        assert rec["matched"] and rec["planned"] == config
        assert {n: len(i) for n, i in rec["actual"].items()} == config
    assert hops_reservations(api) == {GATE}
    # per-node GPU indices read back: a100-2 holds 3 + 2 GPUs, distinct
    a100_2 = api.job(one).gpu_alloc["a100-2"] + api.job(two_even).gpu_alloc["a100-2"]  # type: ignore[union-attr]
    assert len(set(a100_2)) == 5
    # the job saw its environment
    deadline = time.monotonic() + 10
    out = workdir / f"hops-{two_uneven}.out"
    while not out.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    # #HOPS lr=0.1@8, linear scaling: 4 GPUs -> 0.05, 3 GPUs -> 0.0375
    # the placement, and under its old name for a release (HOPS_CONFIG is also the site's config path)
    assert out.read_text().split() == ["4", "0.05", "v100-1:3,v100-2:1", "v100-1:3,v100-2:1", "/tmp/rec.db"]
    env = read_job_env(enactor.env_dir, one)
    assert (env["HOPS_GPUS"], env["HOPS_LR"]) == ("3", "0.0375")


def test_unrealisable_uneven_split_is_refused_and_stays_held(api: CliSlurm, enactor: Enactor, submit) -> None:  # noqa: ANN001
    job_id = submit()
    result = enactor.apply({job_id: {"a100-1": 1, "a100-2": 5}})  # idle nodes: Slurm would give 5+1
    assert list(result.refused) == [job_id] and "greedy" in result.refused[job_id]
    job = api.job(job_id)
    assert job is not None and job.pending and job.held and job.reason == "JobHeldAdmin"


def test_owner_release_does_not_start_a_job_outside_the_plan(api: CliSlurm, enactor: Enactor, submit, live,
                                                             minicluster: Minicluster) -> None:  # noqa: ANN001
    user = live.ensure_test_user()
    enactor.ensure_gate()

    def as_owner(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(minicluster.user_argv(user, list(argv)),
                              capture_output=True, text=True, timeout=30)

    job_id = submit(user=user)
    assert api.job(job_id).reason == "JobHeldUser"  # type: ignore[union-attr]
    assert as_owner("scontrol", "release", job_id).returncode == 0  # the hook's hold is the owner's to release
    live.stays(api, job_id, lambda j: j.pending)  # ... but the gate keeps it off every node

    blocker = submit()
    enactor.apply({blocker: {"v100-1": 4}})
    # the plan puts the user's job on the busy v100-1; released, it waits there
    result = enactor.apply({job_id: {"v100-1": 1}}, settle=False)
    assert result.started == [job_id]
    job = api.job(job_id)
    assert job is not None and job.pending and not job.held and job.reservation == job_reservation(job_id)
    # the owner cannot move it: the hook refuses owner edits of a pending Hops job's nodes (hooks/hops_submit.lua)
    assert as_owner("scontrol", "update", f"JobId={job_id}", "NodeList=v100-2").returncode != 0
    # an edit that gets there anyway (a site hook without Hops's modify call; root here) moves it to the idle
    # v100-2, and the owner releases again: it still must not start there
    minicluster.run(["scontrol", "update", f"JobId={job_id}", "NodeList=v100-2"])
    as_owner("scontrol", "release", job_id)
    job = live.stays(api, job_id, lambda j: j.pending)
    assert job.required_nodes == ("v100-2",) and job.reservation == job_reservation(job_id)
    # Slurm holds it itself (its NodeList is outside its reservation); the engine's refresh makes that an
    # admin hold, which the owner cannot undo
    assert enactor.hold_new() == [job_id]
    assert as_owner("scontrol", "release", job_id).returncode != 0
    assert api.job(job_id).reason == "JobHeldAdmin"  # type: ignore[union-attr]
    # the next round re-applies the plan; it starts on v100-1 once the blocker is gone, never elsewhere
    assert enactor.apply({job_id: {"v100-1": 1}}, settle=False).started == [job_id]
    live.stays(api, job_id, lambda j: j.pending, seconds=1.5)
    api.cancel(blocker)
    job = live.wait_job(api, job_id, lambda j: j.state == "RUNNING" and bool(j.gpu_alloc) and all(j.gpu_alloc.values()))
    assert job.gpu_config() == {"v100-1": 1}
    assert enactor.settle([job_id]).verified.keys() == {job_id}


def test_a_split_slurm_realises_differently_is_caught_and_requeue_held(api: CliSlurm, enactor: Enactor, submit, live) -> None:  # noqa: ANN001
    job_id = submit()
    job = api.job(job_id)
    assert job is not None
    nodes = {n.name: n for n in api.nodes()}
    plan = {"v100-1": 1, "v100-2": 3}  # on idle nodes Slurm splits 4 GPUs 3+1, not 1+3 (apply refuses this; force it)
    enactor.place(job, plan, placement_fields(plan, nodes, list(nodes)))
    result = enactor.settle([job_id])
    assert result.mismatched == {job_id: {"v100-1": (0, 1, 2), "v100-2": (0,)}}
    (rec,) = enactor.journal.allocations(job_id)
    assert rec["planned"] == plan and not rec["matched"]
    job = live.wait_job(api, job_id, lambda j: j.pending)
    assert job.held and job.reservation == "" and job.restart_count == 1
    assert hops_reservations(api) == set()  # no gate was asked for here; the job's own reservation is gone


def test_preemption_then_resume_on_a_new_config_and_unchanged_configs_keep_running(
        api: CliSlurm, enactor: Enactor, submit, live) -> None:  # noqa: ANN001
    moved, stays_put = submit(), submit()
    first = enactor.apply({moved: {"a100-1": 4}, stays_put: {"v100-2": 2}}, round_id="r1")
    assert sorted(first.verified) == sorted([moved, stays_put])
    started_at = api.job(stays_put).start_time  # type: ignore[union-attr]

    enactor.timer = phases = PhaseRecorder()
    second = enactor.apply({moved: {"a100-1": 2, "a100-2": 2}, stays_put: {"v100-2": 2}}, round_id="r2")
    assert second.preempted == [moved] and second.kept == [stays_put] and second.started == [moved]
    # a move: every phase of a preemption and a placement, timed one after another, never one inside another
    assert phases.depth == 0 and set(phases.names) <= set(ENACT_PHASES)
    assert [n for n in phases.names if n not in ("detach", "unreserve", "hold", "grace")] == [
        "notice", "requeuehold", "requeue_wait", "reserve", "place", "env", "release", "await_start", "allocations"]
    job = api.job(moved)
    assert job is not None and job.state == "RUNNING" and job.restart_count == 1
    assert job.gpu_config() == {"a100-1": 2, "a100-2": 2}
    kept = api.job(stays_put)
    assert kept is not None and kept.state == "RUNNING" and kept.start_time == started_at and kept.restart_count == 0
    assert [a.kind for a in enactor.journal.actions(job_id=stays_put) if a.round_id == "r2"] == []

    third = enactor.apply({moved: None}, round_id="r3")  # dropped from the plan: preempted, held, not lost
    assert third.preempted == [moved]
    job = live.wait_job(api, moved, lambda j: j.pending)
    assert job.held and job.reason == "JobHeldAdmin" and job.reservation == ""  # requeuehold alone leaves a user hold
    assert hops_reservations(api) == {GATE}


def test_a_job_moves_to_another_gpu_type_after_preemption(api: CliSlurm, enactor: Enactor, submit) -> None:  # noqa: ANN001
    # Heterogeneity-aware placement must be free to change a job's GPU type between rounds. Requests are
    # untyped (the nodes fix the type): a typed request changed to another type is never started by 22.05.
    job_id = submit()
    first = enactor.apply({job_id: {"a100-1": 4}}, round_id="t1")
    assert first.verified == {job_id: {"a100-1": (0, 1, 2, 3)}}
    second = enactor.apply({job_id: {"v100-1": 2, "v100-2": 2}}, round_id="t2")
    assert second.preempted == [job_id] and second.started == [job_id]
    job = api.job(job_id)
    assert job is not None and job.state == "RUNNING" and job.gpu_config() == {"v100-1": 2, "v100-2": 2}
    back = enactor.apply({job_id: {"a100-2": 8}}, round_id="t3")
    assert back.started == [job_id]
    job = api.job(job_id)
    assert job is not None and job.state == "RUNNING" and job.gpu_config() == {"a100-2": 8}
    assert hops_reservations(api) == {GATE}
