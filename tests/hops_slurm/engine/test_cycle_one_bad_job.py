"""One bad job never stops a refresh or a round (docs/security.md, "One bad job"), checked as a property over
every named step of the cycle (:mod:`hops_slurm.engine.cycle`), enumerated from its own lists so that a new
step is covered as soon as it is added: for a per-job step (one with a function in ``PER_JOB``) a job whose
processing in it fails is set aside with a reason naming the step while the step goes on with the others;
any other step that fails is recorded and the cycle runs every later step that does not need it. Against
the stand-in slurmctld (standin.py), with an offer file, jobs running, ending, new, and started on offers."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from hops_slurm.config import parse_config
from hops_slurm.directives import COMMENT_PREFIX
from hops_slurm.engine import offer
from hops_slurm.engine import refresh, round as round_steps
from hops_slurm.engine.cycle import Cycle
from hops_slurm.engine.engine import Engine
from hops_slurm.engine.exporter import EngineMetrics
from hops_slurm.engine.state import JobState
from hops_slurm.slurm.api import SlurmJob
from hops_slurm.slurm.enact import read_job_env
from standin import StandInSlurm

pytestmark = pytest.mark.step_failures  # the steps fail on purpose here

JOB = "gpus=1 samples=100000 batch-size=8 model=resnet18"
FAULT = "injected fault"


def _engine(tmp_path: Path, api: StandInSlurm) -> Engine:
    config = parse_config({"engine": {"settle_timeout": 0.3, "probe_size": "tiny", "offer_file": str(tmp_path / "hops-offer")},
                           "paths": {"state_dir": str(tmp_path / "state")}})
    e = Engine(config, api=api).open()
    assert e.state is not None
    e.state.remember_model("root/resnet18|b8|tiny", "sig-resnet18", ["a100"])  # profiled: no probe job
    return e


def _on_offer(job_id: str, node: str, gpus: tuple[int, ...], directives: str = JOB, second: float = 1000.0) -> SlurmJob:
    """A job the submit hook put on an offer (one job per offer: one a second), which Slurm started at once
    (unheld, in hops-offer)."""
    return SlurmJob(job_id=job_id, name=f"job{job_id}", user="root", state="RUNNING", priority=100, partition="hops",
                    admin_comment=COMMENT_PREFIX + directives, submit_time=second, start_time=second,
                    reservation=offer.RESERVATION, nodes=(node,), required_nodes=(node,),
                    tres_per_node=f"gres:gpu:{len(gpus)}", gpu_alloc={node: gpus})


def _free_gpus(api: StandInSlurm) -> list[tuple[str, int]]:
    used = api._used()
    return [(n.name, i) for n in api._nodes for i in range(n.gpus_total) if i not in used[n.name]]


def _scene(tmp_path: Path) -> tuple[StandInSlurm, Engine]:
    """An engine whose next refresh meets every kind of job: running (1, 2), ended since (3, 4), new and
    pending (5, 6), new and started on an offer (21, 22)."""
    api = StandInSlurm(starts=True, nodes=3, gpus_per_node=4)
    for j in ("1", "2", "3", "4"):
        api.submit(j, JOB)
    engine = _engine(tmp_path, api)
    engine.refresh()
    engine.round()
    engine.refresh()  # the started jobs settled
    assert all(api.get(j).active for j in ("1", "2", "3", "4"))
    api.end("3")
    api.end("4")
    for j in ("5", "6"):
        api.submit(j, JOB)
    free = _free_gpus(api)
    for k, (j, (node, gpu)) in enumerate(zip(("21", "22"), free)):
        api._jobs[j] = _on_offer(j, node, (gpu,), second=1000.0 + k)
    return api, engine


def _count(metrics: EngineMetrics, cycle: str, step: str) -> float:
    value = metrics.registry.get_sample_value("hops_engine_step_duration_seconds_count", {"cycle": cycle, "step": step})
    return value or 0.0


def _ran(engine: Engine, cycle: str, names: list[str], before: dict[str, float]) -> list[str]:
    return [n for n in names if _count(engine.metrics, cycle, n) > before[n]]


def _needing(cycle: Cycle[Any, Any], failed: str) -> set[str]:
    """The steps of ``cycle`` that need ``failed``, directly or not, by the cycle's own declarations."""
    out = {failed}
    for step in cycle.bound(None, None):  # type: ignore[arg-type]  # the declarations only: nothing runs
        if out.intersection(step.needs):
            out.add(step.name)
    return out - {failed}


def _no_heartbeat(engine: Engine) -> Path:
    """The heartbeat file, removed: a refresh that gets to its heartbeat step writes it again."""
    path = engine.state_dir / "heartbeat"
    path.unlink(missing_ok=True)
    return path


REFRESH = refresh.CYCLE.names
ROUND = round_steps.CYCLE.names


@pytest.mark.parametrize("step", REFRESH)
def test_a_job_that_fails_in_any_refresh_step_is_set_aside_and_the_refresh_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str) -> None:
    api, engine = _scene(tmp_path)
    try:
        method = refresh.PER_JOB.get(step)
        before = {n: _count(engine.metrics, "refresh", n) for n in REFRESH}
        beat = _no_heartbeat(engine)
        if method is None:
            _fail_the_step(monkeypatch, refresh, step)
            if step == refresh.CYCLE.first:  # no fresh read of Slurm: nothing else runs, nor a round on it
                with pytest.raises(ValueError, match=FAULT):
                    engine.refresh()
                assert _ran(engine, "refresh", REFRESH, before) == [step]
                monkeypatch.undo()
                engine.refresh()  # the next one reads again
                assert _ran(engine, "refresh", REFRESH, before) == REFRESH
                return
            out = engine.refresh()
            assert FAULT in out["failed"][step]
            skipped = _needing(refresh.CYCLE, step)
            assert set(out["failed"]) == {step, *skipped}
            assert _ran(engine, "refresh", REFRESH, before) == [n for n in REFRESH if n not in skipped]
        else:
            seen = _fail_one_job(monkeypatch, refresh, method)
            out = engine.refresh()
            bad = seen[0]
            assert "failed" not in out  # every step ran, the failing one to its end
            assert _ran(engine, "refresh", REFRESH, before) == REFRESH
            assert bad.aside.startswith(f"refresh step {step}: ") and FAULT in bad.aside
            assert len(seen) > 1, f"the {step} step stopped at its bad job"  # it went on with the others
        # the others processed: saved, the heartbeat touched, the new jobs placed by the round after it
        assert beat.exists() or step == "heartbeat"
        assert engine.state is not None
        saved = engine.state.jobs()
        good = [j for j in ("1", "2", "5", "6", "21", "22") if j in engine.tracked and not engine.tracked[j].aside]
        assert set(good) <= set(saved) and len(good) >= 5
        waiting = {js.job_id for js in engine.schedulable() if api.get(js.job_id).pending}
        assert method is None or waiting & {"5", "6"}  # a new job went through every step
        planning = engine.round()
        assert planning is not None and waiting <= set(planning.plan.placed())
    finally:
        engine.close()


@pytest.mark.parametrize("step", ROUND)
def test_a_round_step_that_fails_leaves_the_others_to_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         step: str) -> None:
    api, engine = _scene(tmp_path)
    try:
        engine.refresh()
        method = round_steps.PER_JOB.get(step)
        seen = _fail_one_job(monkeypatch, round_steps, method) if method else _fail_the_step(monkeypatch, round_steps, step)
        before = {n: _count(engine.metrics, "round", n) for n in ROUND}
        path = tmp_path / "hops-offer"  # an offer still open from before
        offer.publish(path, offer.Offer(as_of=0.0, expires=4e9, tres="gres:gpu:", nodes=(("n1", 1, ("hops",)),)))
        engine.round()
        skipped = set() if method else _needing(round_steps.CYCLE, step)
        assert _ran(engine, "round", ROUND, before) == [n for n in ROUND if n not in skipped]
        if method:
            assert seen[0].aside.startswith(f"round step {step}: ") and len(seen) > 1
        if ROUND.index(step) <= ROUND.index("offer"):
            assert offer.read(path) is None  # a round that failed before its offer closes the offer
        else:  # a step after the offer (the summary): the offer it made stands
            assert offer.read(path) is not None
        monkeypatch.undo()
        planning = engine.round()  # the next round is whole again
        assert planning is not None and {"5", "6"} <= set(planning.plan.placed())
    finally:
        engine.close()


def _fail_the_step(monkeypatch: pytest.MonkeyPatch, steps: ModuleType, step: str) -> list[JobState]:
    """Put a step that raises in place of ``step`` in the cycle's list (``steps``: the cycle's module)."""
    def boom(session: object, resources: object) -> None:
        raise ValueError(FAULT)

    cycle = steps.CYCLE
    monkeypatch.setattr(cycle, "steps", tuple((n, boom if n == step else fn) for n, fn in cycle.steps))
    return []


def _fail_one_job(monkeypatch: pytest.MonkeyPatch, steps: ModuleType, one: Callable[..., Any]) -> list[JobState]:
    """Patch the per-job function ``one`` (of the cycle's module ``steps``) to fail for the first job it is
    given; returns the jobs given, in order."""
    seen: list[JobState] = []

    def failing(session: object, resources: object, js: JobState) -> Any:
        seen.append(js)
        if js is seen[0]:
            raise ValueError(FAULT)
        return one(session, resources, js)

    monkeypatch.setattr(steps, one.__name__, failing)
    return seen


def test_every_per_job_function_is_declared() -> None:
    """Each ``<step>_one`` function of a cycle's module is its step's entry in ``PER_JOB`` (the tests above
    cover the steps found there)."""
    for steps in (refresh, round_steps):
        ones = {name for name in vars(steps) if name.endswith("_one") and callable(getattr(steps, name))}
        assert ones == {fn.__name__ for fn in steps.PER_JOB.values()}, steps.__name__
        assert all(fn.__name__ == f"{step}_one" for step, fn in steps.PER_JOB.items())


def test_every_step_with_jobs_meets_more_than_one_in_the_scene(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scene above gives each per-job step at least two jobs (else 'the step goes on' would hold vacuously)."""
    api, engine = _scene(tmp_path)
    given: dict[str, int] = {}
    for step, one in refresh.PER_JOB.items():
        def counting(session: object, resources: object, js: JobState, step: str = step, one: Any = one) -> Any:
            given[step] = given.get(step, 0) + 1
            return one(session, resources, js)

        monkeypatch.setattr(refresh, one.__name__, counting)
    try:
        engine.refresh()
    finally:
        engine.close()
    assert set(given) == set(refresh.PER_JOB) and min(given.values()) >= 2, given


def test_an_offered_job_on_a_gpu_count_its_lr_table_lacks_stops_no_refresh(tmp_path: Path,
                                                                          caplog: pytest.LogCaptureFixture) -> None:
    """Issue 34, H2: Slurm ran an offered job on 4 GPUs (``--exclusive``, say) while its ``lr=`` table names
    1 and 2 only: its environment cannot be written (``lr_for`` raises). The refresh goes on: the other
    offered job gets its environment file, every step runs, and the round places the pending job."""
    api = StandInSlurm(starts=True, nodes=2, gpus_per_node=4)
    engine = _engine(tmp_path, api)
    try:
        engine.refresh_and_fill()
        api._jobs["21"] = _on_offer("21", "n1", (0, 1, 2, 3), "gpus=1,2 samples=100000 batch-size=8 model=resnet18 "
                                                             "lr=0.1@1,0.2@2")
        api._jobs["22"] = _on_offer("22", "n2", (0,), second=1001.0)
        api.submit("5", JOB)
        beat = _no_heartbeat(engine)
        with caplog.at_level(logging.WARNING):
            out = engine.refresh()
        assert "failed" not in out and beat.exists()
        assert len([r for r in caplog.records if "job 21 set aside: refresh step adopt: " in r.getMessage()]) == \
            (1 if api.get("21").active else 0)
        caplog.clear()
        assert read_job_env(engine.enactor.env_dir, "22")["HOPS_GPUS"] == "1"
        assert not (engine.enactor.env_dir / "21.env").exists()  # never adopted as is
        if api.get("21").active:  # (a refresh may also requeue-hold it; either way it is not adopted as is)
            assert engine.tracked["21"].aside.startswith("refresh step adopt: ")
            assert "no learning rate for 4 GPUs" in engine.tracked["21"].aside
        assert engine.state is not None and {"21", "22", "5"} <= set(engine.state.jobs())
        planning = engine.round()
        assert planning is not None and "5" in planning.plan.placed()
        with caplog.at_level(logging.WARNING):
            engine.refresh()
            engine.refresh()
        assert not [r for r in caplog.records if "job 21 set aside" in r.getMessage()]  # logged once, not every refresh
    finally:
        engine.close()


def test_a_state_row_the_database_refuses_keeps_no_other_job_unsaved(tmp_path: Path) -> None:
    """The state rows go in one transaction; one the database will not take (a number SQLite cannot hold)
    sets that job aside and the others are saved each on its own."""
    api, engine = _scene(tmp_path)
    try:
        engine.tracked["2"].first_seen = 2 ** 70  # an int too large for SQLite (a field no step recomputes)
        out = engine.refresh()
        assert "failed" not in out
        assert engine.tracked["2"].aside.startswith("refresh step save: ")
        assert engine.state is not None
        saved = engine.state.jobs()
        assert {"1", "5", "6", "21", "22"} <= set(saved) and saved["5"].last_state == "PENDING"
        assert saved["2"].first_seen != 2 ** 70  # its last good row stays
    finally:
        engine.close()


#: one job whose data (as Slurm reports it) is odd in one way each: pending or running, Hops or not
HOSTILE_JOBS: dict[str, dict[str, Any]] = {
    "directives-garbage": {"admin_comment": COMMENT_PREFIX + "gpus=\u2028\x00 model=" + "x" * 100_000},
    "directives-empty": {"admin_comment": COMMENT_PREFIX},
    "directives-huge-gpus": {"admin_comment": COMMENT_PREFIX + "gpus=99999999999 samples=1 batch-size=8 model=resnet18"},
    "name-odd": {"name": "a\u2028b\x00c\u202e" + "n" * 10_000, "admin_comment": COMMENT_PREFIX + JOB},
    "user-odd": {"user": "ev|il\u2028=x y", "account": "a|b=c", "qos": "q\x00", "admin_comment": COMMENT_PREFIX + JOB},
    "times-huge": {"submit_time": 1e30, "eligible_time": 1e30, "time_limit": 1e30, "admin_comment": COMMENT_PREFIX + JOB},
    "times-negative": {"submit_time": -1e18, "eligible_time": -5.0, "time_limit": -60.0, "admin_comment": COMMENT_PREFIX + JOB},
    "priority-odd": {"priority": -(2 ** 63), "restart_count": 2 ** 64, "node_count": -1, "admin_comment": COMMENT_PREFIX + JOB},
    "tres-garbage": {"tres_per_node": "gres:gpu:abc,gres:gpu:-1", "tres_per_job": "gres:gpu:" + "9" * 30,
                     "admin_comment": COMMENT_PREFIX + JOB},
    "running-ghost-node": {"state": "RUNNING", "nodes": ("ghost",), "gpu_alloc": {"ghost": (0, 1)}, "start_time": 1e30,
                           "admin_comment": COMMENT_PREFIX + JOB},
    "running-odd-gpus": {"state": "RUNNING", "nodes": ("n1",), "gpu_alloc": {"n1": (99, -1)}, "start_time": -1.0,
                         "admin_comment": COMMENT_PREFIX + JOB},
    "running-offer-mixed": {"state": "RUNNING", "reservation": "maint,,hops-offer", "nodes": ("n1",),
                            "gpu_alloc": {"n1": (0,)}, "admin_comment": COMMENT_PREFIX + JOB},
    "reservation-odd": {"reservation": "hops-j" + "9" * 5000, "admin_comment": COMMENT_PREFIX + JOB},
    "dependency-odd": {"dependency": "afterok:" + ":".join(["1"] * 500) + "(unfulfilled)\u2028",
                       "admin_comment": COMMENT_PREFIX + JOB},
}


@pytest.mark.parametrize("kind", sorted(HOSTILE_JOBS))
def test_one_job_with_odd_data_stops_no_refresh_and_no_round(tmp_path: Path, kind: str) -> None:
    """The property above with real data instead of an injected fault: a job whose fields are odd (as a
    user, or a Slurm of another release, can make them) is set aside or left alone; every step of the
    refresh runs, the round places the pending jobs, and the next refresh runs whole too."""
    api, engine = _scene(tmp_path)
    try:
        fields: dict[str, Any] = {"job_id": "77", "name": "odd", "user": "root", "state": "PENDING", "priority": 0,
                                  "partition": "hops", "submit_time": 1000.0} | HOSTILE_JOBS[kind]
        api._jobs["77"] = SlurmJob(**fields)
        out = engine.refresh()
        assert "failed" not in out, out
        planning = engine.round()
        assert planning is not None and {"5", "6"} <= set(planning.plan.placed())
        out = engine.refresh()
        assert "failed" not in out, out
    finally:
        engine.close()
