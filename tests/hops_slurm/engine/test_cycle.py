"""The engine's cycle as named steps (:mod:`hops_slurm.engine.cycle`): the loop times every step and exports it,
the refresh and the round run their steps in order, and a round's views are remade only where inputs changed."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from hops_slurm.config import parse_config
from hops_slurm.engine import refresh, round as round_steps
from hops_slurm.engine.cycle import Step, run_steps
from hops_slurm.engine.engine import Engine
from hops_slurm.engine.exporter import EngineMetrics
from hops_slurm.slurm.api import SlurmError
from standin import StandInSlurm

JOB = "gpus=1,2 samples=1000 batch-size=8 model=resnet18"


def _engine(tmp_path: Path, api: StandInSlurm, **engine: object) -> Engine:
    config = parse_config({"engine": {"settle_timeout": 0.3, "probe_size": "tiny", **engine},
                           "paths": {"state_dir": str(tmp_path / "state")}})
    e = Engine(config, api=api).open()
    assert e.state is not None
    e.state.remember_model("root/resnet18|b8|tiny", "sig-resnet18", ["a100"])  # profiled: no probe job
    return e


def _count(metrics: EngineMetrics, cycle: str, step: str) -> float:
    value = metrics.registry.get_sample_value("hops_engine_step_duration_seconds_count", {"cycle": cycle, "step": step})
    return value or 0.0


def test_run_steps_stops_at_a_failure_of_the_engine_itself() -> None:
    seen: list[tuple[str, str, float]] = []
    ran: list[str] = []

    def boom() -> None:
        ran.append("b")
        raise SlurmError("slurmctld unreachable")

    steps = [Step("a", lambda: ran.append("a")), Step("b", boom), Step("c", lambda: ran.append("c"))]
    with pytest.raises(SlurmError, match="unreachable"):
        run_steps("refresh", steps, lambda cycle, step, s: seen.append((cycle, step, s)))
    assert ran == ["a", "b"]  # c never ran: Slurm's state is repaired from the journal first
    assert [(c, s) for c, s, _ in seen] == [("refresh", "a"), ("refresh", "b")]  # the failed step is still timed
    assert all(s >= 0 for *_, s in seen)


@pytest.mark.step_failures
def test_run_steps_records_any_other_failure_and_runs_every_step_that_does_not_need_it(
        caplog: pytest.LogCaptureFixture) -> None:
    ran: list[str] = []

    def boom() -> None:
        ran.append("b")
        raise KeyError("no such thing")

    steps = [Step("a", lambda: ran.append("a")), Step("b", boom, ("a",)), Step("c", lambda: ran.append("c"), ("b",)),
             Step("d", lambda: ran.append("d"), ("a",)), Step("e", lambda: ran.append("e"), ("c",))]
    with caplog.at_level(logging.ERROR, logger="hops_slurm.engine.cycle"):
        failed = run_steps("refresh", steps, lambda *_: None)
    assert ran == ["a", "b", "d"]  # c needs b, e needs c: skipped; d runs
    assert failed == {"b": "KeyError: 'no such thing'", "c": "skipped: it needs b", "e": "skipped: it needs c"}
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["refresh step b failed (KeyError: 'no such thing'); skipped: c, e; the other steps run"]


def test_refresh_and_round_export_each_named_step_once(tmp_path: Path) -> None:
    api = StandInSlurm(starts=True)
    for j in ("1", "2"):
        api.submit(j, JOB)
    engine = _engine(tmp_path, api)
    try:
        engine.refresh()
        m = engine.metrics
        assert [_count(m, "refresh", name) for name in refresh.CYCLE.names] == [1.0] * len(refresh.STEPS)
        planning = engine.round()
        assert planning is not None and set(planning.plan.placed()) == {"1", "2"}
        assert [_count(m, "round", name) for name in round_steps.CYCLE.names] == [1.0] * len(round_steps.STEPS)
        plannings = _count(m, "planning", "plan")
        assert plannings >= 1  # the round plan, and a fragment plan when GPUs stayed idle
        for part in ("enact", "record", "views"):
            assert _count(m, "planning", part) == plannings
        text = m.registry.get_sample_value("hops_engine_step_duration_seconds_sum", {"cycle": "round", "step": "plannings"})
        assert text is not None and text > 0
    finally:
        engine.close()


def test_a_dry_run_refresh_skips_the_steps_that_change_things(tmp_path: Path) -> None:
    api = StandInSlurm()
    api.submit("1", JOB)
    engine = _engine(tmp_path, api)
    engine.close()  # its start gated the nodes and held the job
    api.calls.clear()
    dry = Engine(engine.config, api=api, dry_run=True).open()
    try:
        dry.refresh()
        m = dry.metrics
        for name in refresh.CYCLE.names:
            assert _count(m, "refresh", name) == (0.0 if name in refresh.CHANGES else 1.0), name
        assert not [c for c in api.calls if c[0] != "submit_probe"]  # nothing written to Slurm
    finally:
        dry.close()


def test_views_after_enactment_are_remade_only_for_the_jobs_it_changed(tmp_path: Path) -> None:
    api = StandInSlurm(starts=True, nodes=1, gpus_per_node=2)
    for j in ("1", "2", "3", "4", "5"):
        api.submit(j, JOB)
    engine = _engine(tmp_path, api)
    made: list[int] = []
    original = engine.views.update

    def counting(*args: object, **kw: object) -> object:
        out = original(*args, **kw)  # type: ignore[arg-type]
        made.append(engine.views.made)
        return out

    engine.views.update = counting  # type: ignore[method-assign]
    try:
        engine.refresh()
        planning = engine.round()
        assert planning is not None
        started = planning.enactment.started if planning.enactment else []
        assert started  # the round placed jobs on the two GPUs
        assert made[0] == 5  # every view made once at the round's start
        # after enactment: the started jobs' views again, the other pending jobs' kept
        assert made[1] == len(started), made
    finally:
        engine.close()


def test_calibrations_are_asked_for_only_while_a_gpu_type_is_not_known_calibrated(tmp_path: Path) -> None:
    """The first refresh stores the default calibration of the nodes' type; later refreshes do not refit every
    type's calibration to learn nothing; a node of a new type gets its default at the next refresh."""
    from hops_slurm.slurm.api import SlurmNode

    api = StandInSlurm()
    engine = _engine(tmp_path, api)
    try:
        store = engine.store
        asked: list[int] = []
        real = store.calibrations
        store.calibrations = lambda: asked.append(1) or real()  # type: ignore[method-assign]
        engine.refresh()
        assert set(real()) == {"a100"}
        calls = len(asked)
        engine.refresh()
        engine.refresh()
        assert len(asked) == calls  # a100 is known calibrated: the store is not asked again
        api._nodes.append(SlurmNode(name="n9", state="idle", gpu_type="h100", gpus_total=4, partitions=("hops",), cpus=16))
        engine.refresh()
        assert set(real()) == {"a100", "h100"} and len(asked) == calls + 1
    finally:
        engine.close()
