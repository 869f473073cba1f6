"""One bad job never stops the engine (unit level, on the in-memory stand-in for slurmctld).

One test per kind of per-job failure: stored directives that do not read back (the finding
``lr=0.1e-99@1`` stored as ``lr=1e-100@1``), a corrupt probe entry, an estimate that raises, and the
job's own failure in the enactment. Each time the bad job is set aside with a reason its owner sees
(the job's Comment and ``hops-slurm queue``), and the good job is planned and released in the same round.
The live counterpart is in ``test_engine_faults_live.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hops_slurm.config import parse_config
from hops_slurm.engine.aside import COMMENT_PREFIX, reason_text
from hops_slurm.engine.bookkeeping import job_record
from hops_slurm.engine.engine import Engine
from hops_slurm.engine.queue import queue_rows
from hops_slurm.engine.state import PROFILE_DONE, PROFILE_PROBING
from standin import StandInSlurm

GOOD = "gpus=1,2 samples=1000 batch-size=8 model=resnet18"
BAD_LR = "gpus=1 samples=1000 batch-size=8 model=resnet18 lr=1e-100@1"  # canonical form of lr=0.1e-99@1


def _engine(tmp_path: Path, api: StandInSlurm) -> Engine:
    config = parse_config({"engine": {"settle_timeout": 0.2, "probe_size": "tiny"},
                           "paths": {"state_dir": str(tmp_path / "state")}})
    engine = Engine(config, api=api).open()
    assert engine.state is not None
    engine.state.remember_model("root/resnet18|b8|tiny", "sig-resnet18", ["a100"])  # profiled: no probe job
    return engine


def _released(api: StandInSlurm) -> set[str]:
    return {j for c in api.calls if c[0] == "release" for j in c[1].split(",")}  # a list: one command for many


def _round(engine: Engine) -> None:
    engine.refresh()
    engine.round()


def test_unreadable_stored_directives_set_the_job_aside_and_the_round_goes_on(tmp_path: Path) -> None:
    api = StandInSlurm()
    api.submit("1", BAD_LR)
    api.submit("2", GOOD)
    engine = _engine(tmp_path, api)
    try:
        for _ in range(2):  # every round, not only the first
            _round(engine)
        assert "2" in _released(api) and "1" not in _released(api)
        bad = engine.tracked["1"]
        assert "lr" in bad.aside and "1e-100" in bad.aside
        assert api.get("1").comment == COMMENT_PREFIX + bad.aside  # scontrol show job: Comment=hops: set aside: ...
        assert api.get("1").reason == "JobHeldAdmin"  # still held, never started
        rows = {r.jobid: r for r in queue_rows(engine.state, api.jobs())}  # type: ignore[arg-type]
        assert rows["1"].plan.startswith("set aside: ") and "1e-100" in rows["1"].plan
        assert not rows["2"].plan.startswith("set aside")
    finally:
        engine.close()


def test_a_job_set_aside_is_taken_back_when_its_directives_are_corrected(tmp_path: Path) -> None:
    api = StandInSlurm()
    api.submit("1", BAD_LR)
    engine = _engine(tmp_path, api)
    try:
        _round(engine)
        assert engine.tracked["1"].aside
        api.update_job("1", {"AdminComment": "hops:" + GOOD})  # an administrator corrects the stored form
        _round(engine)
        assert engine.tracked["1"].aside == "" and "1" in _released(api)
        assert api.get("1").comment == ""  # the reason is cleared again
    finally:
        engine.close()


def test_a_corrupt_probe_entry_sets_only_that_job_aside(tmp_path: Path) -> None:
    api = StandInSlurm()
    api.submit("1", "gpus=1 samples=1000 batch-size=8 model=vgg11")
    api.submit("2", GOOD)
    engine = _engine(tmp_path, api)
    try:
        engine.refresh()
        js = engine.tracked["1"]  # its saved probe bookkeeping is damaged (attempts is not a number)
        js.profile, js.probes = PROFILE_PROBING, {"a100": {"status": "running", "slurm_id": "999", "attempts": "x"}}
        _round(engine)
        assert "profiling" in engine.tracked["1"].aside
        assert engine.tracked["2"].profile == PROFILE_DONE and "2" in _released(api)
    finally:
        engine.close()


def test_an_estimate_that_raises_sets_only_that_job_aside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    api = StandInSlurm()
    api.submit("1", "gpus=1 samples=1000 batch-size=16 model=resnet18")
    api.submit("2", GOOD)
    engine = _engine(tmp_path, api)
    assert engine.state is not None
    engine.state.remember_model("root/resnet18|b16|tiny", "sig-poisoned", ["a100"])

    class Poisoned:
        def throughput_fn(self, sig: str) -> object:
            if sig == "sig-poisoned":
                raise ZeroDivisionError("float division by zero")
            from estimator.errors import EstimateUnavailable

            raise EstimateUnavailable("no data")

    monkeypatch.setattr(engine.res.reader, "estimator_for", lambda _cluster: Poisoned())
    try:
        _round(engine)
        assert "division by zero" in engine.tracked["1"].aside
        assert "2" in _released(api) and "1" not in _released(api)
    finally:
        engine.close()


def test_the_enactor_refuses_one_job_whose_directives_break_and_places_the_rest(tmp_path: Path) -> None:
    from hops_slurm.journal import Journal
    from hops_slurm.slurm.enact import Enactor

    api = StandInSlurm()
    api.submit("1", BAD_LR)
    api.submit("2", GOOD)
    enactor = Enactor(api, Journal(":memory:"), env_dir=tmp_path / "jobs", settle_timeout=0.2)
    result = enactor.apply({"1": {"n1": 1}, "2": {"n2": 2}}, settle=False)
    assert result.started == ["2"] and "cannot be read back" in result.refused["1"]


def test_reasons_are_one_printable_line_of_bounded_length() -> None:
    text = reason_text("probe", "bad\nline \x1b[31mred\x00" + "x" * 1000)
    assert "\n" not in text and "\x1b" not in text and "\x00" not in text and "\\x1b" in text
    assert len(text) <= 240


@pytest.mark.parametrize("edit", [{"TresPerNode": "gres:gpu:a100:4"}, {"NodeList": "n1,n2"}, {"TresPerJob": "gres:gpu:8"}])
def test_an_owners_edit_of_a_released_job_puts_it_back_on_hold(tmp_path: Path, edit: dict[str, str]) -> None:
    from hops_slurm.journal import Journal
    from hops_slurm.slurm.enact import Enactor

    api = StandInSlurm()
    api.submit("2", GOOD)
    enactor = Enactor(api, Journal(":memory:"), env_dir=tmp_path / "jobs", settle_timeout=0.2)
    assert enactor.apply({"2": {"n2": 2}}, settle=False).started == ["2"]
    assert enactor.hold_new() == []  # placed as planned: left alone
    api.update_job("2", edit)  # the owner edits the released, still pending job
    assert enactor.hold_new() == ["2"] and api.get("2").reason == "JobHeldAdmin"


def test_a_job_in_a_hops_reservation_it_was_not_given_is_detached(tmp_path: Path) -> None:
    from hops_slurm.journal import Journal
    from hops_slurm.slurm.api import SlurmJob
    from hops_slurm.slurm.enact import Enactor

    api = StandInSlurm()
    api.submit("2", GOOD, user="alice")
    enactor = Enactor(api, Journal(":memory:"), env_dir=tmp_path / "jobs", settle_timeout=0.2)
    enactor.apply({"2": {"n2": 2}}, settle=False)
    # alice's second job, without #HOPS, asks for her Hops job's reservation; bob's asks for the gate
    api._jobs["3"] = SlurmJob(job_id="3", user="alice", state="PENDING", reservation="hops-j2")
    api._jobs["4"] = SlurmJob(job_id="4", user="bob", state="PENDING", reservation="hops-gate")
    api._jobs["5"] = SlurmJob(job_id="5", user="root", name="hops-probe-2-a100", state="PENDING", reservation="hops-gate")
    assert enactor.evict_foreign() == ["3", "4"]
    assert api.get("3").reservation == "" and api.get("2").reservation == "hops-j2"


def test_failing_slurm_calls_never_set_a_job_aside_and_recovery_repairs(tmp_path: Path) -> None:
    """Every 3rd mutating call fails (the live fault injector does this to scontrol): steps fail, no job
    is blamed, and after recovery from the journal every job is admin-held or released as planned."""
    from hops_slurm.slurm.api import SlurmError

    api = StandInSlurm()
    for i in range(1, 5):
        api.submit(str(i), GOOD)
    engine = _engine(tmp_path, api)
    api.fail_every = 3
    failures = 0
    try:
        for _ in range(6):
            try:
                engine.full_round()
            except SlurmError:
                failures += 1
                try:
                    engine.recover()
                except SlurmError:
                    failures += 1
        api.fail_every = 0
        engine.recover()
        engine.full_round()
        assert api.faults >= 3, failures  # faults happened
        assert not any(js.aside for js in engine.tracked.values())
        for job in api.jobs():
            placed = job.reservation == f"hops-j{job.job_id}" and job.reason != "JobHeldAdmin"
            assert placed or job.reason == "JobHeldAdmin", job
        assert _released(api) == {"1", "2", "3", "4"}
    finally:
        engine.close()


def test_a_job_no_configuration_serves_is_set_aside_with_the_reason_and_not_placed_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # job 1's model made no progress wherever it could run (its estimate is 0 on every config,
    # estimator.progress): the round sets it aside, its owner reads why, and it is never released
    from estimator.errors import EstimateUnavailable
    from planner.servable import NO_USABLE_CONFIG

    api = StandInSlurm()
    api.submit("1", "gpus=1 samples=1000 batch-size=16 model=resnet18")
    api.submit("2", GOOD)
    engine = _engine(tmp_path, api)
    assert engine.state is not None
    engine.state.remember_model("root/resnet18|b16|tiny", "sig-stalled", ["a100"])

    class Stalled:
        type_gpus = {"a100": 8}

        def throughput_fn(self, sig: str) -> object:
            if sig == "sig-stalled":
                return lambda cfg: 0.0
            raise EstimateUnavailable("no data")

        def expected_age(self, sig: str, samples: float, reqs: object) -> float:
            return 3600.0

        def sensitivity(self, sig: str, gpu_type: str | None = None) -> float:
            return 1.0

    monkeypatch.setattr(engine.res.reader, "estimator_for", lambda _cluster: Stalled())
    try:
        for _ in range(3):
            _round(engine)
        stalled = engine.tracked["1"]
        assert NO_USABLE_CONFIG in stalled.aside
        assert api.get("1").comment == COMMENT_PREFIX + stalled.aside
        assert "1" not in _released(api) and "2" in _released(api)
        rows = {r.jobid: r for r in queue_rows(engine.state, api.jobs())}  # type: ignore[arg-type]
        assert rows["1"].plan.startswith("set aside: ") and NO_USABLE_CONFIG in rows["1"].plan
        # its record carries the reason (records.sqlite): cancelled so, reports count it set aside, not unfinished
        assert job_record(engine.res, stalled).aside == stalled.aside
        assert job_record(engine.res, engine.tracked["2"]).aside == ""
    finally:
        engine.close()


def test_a_hops_reservation_is_found_in_any_comma_list_slurm_reads(tmp_path: Path) -> None:
    """Slurm reads --reservation as a comma list and skips empty names: ``,hops-offer``, ``maint,hops-offer``,
    ``hops-j2,`` all put a job in a Hops reservation. Each is foreign and detached (pending) or requeue-held
    (running); only the exact one-name fields the engine and the hook write are left alone."""
    from hops_slurm.directives import COMMENT_PREFIX
    from hops_slurm.journal import Journal
    from hops_slurm.slurm.api import SlurmJob
    from hops_slurm.slurm.enact import Enactor
    from hops_slurm.slurm.foreign import PROBE_RESERVATION_PREFIX
    from hops_slurm.engine.profiling import PROBE_RESERVATION_PREFIX as PROFILING_PREFIX

    assert PROBE_RESERVATION_PREFIX == PROFILING_PREFIX
    api = StandInSlurm()
    hops = COMMENT_PREFIX + GOOD
    foreign = {"10": ",hops-offer", "11": "maint,hops-offer", "12": "hops-offer,", "13": ",,hops-gate",
               "14": "hops-j14,", "15": "x,hops-p2"}
    for job_id, resv in foreign.items():
        api._jobs[job_id] = SlurmJob(job_id=job_id, user="root" if job_id == "13" else "alice", state="PENDING",
                                     name="hops-probe-2-a100" if job_id == "15" else "", admin_comment=hops,
                                     reservation=resv)
    api._jobs["20"] = SlurmJob(job_id="20", user="alice", state="PENDING", reservation="maint,other")  # not Hops's
    api._jobs["21"] = SlurmJob(job_id="21", user="alice", state="PENDING", admin_comment=hops, reservation="hops-j21")
    api._jobs["22"] = SlurmJob(job_id="22", user="alice", state="RUNNING", admin_comment=hops, reservation="hops-offer",
                               nodes=("n1",), gpu_alloc={"n1": (0,)})
    api._jobs["23"] = SlurmJob(job_id="23", user="alice", state="RUNNING", admin_comment=hops,
                               reservation=",hops-offer", nodes=("n1",), gpu_alloc={"n1": (1,)})
    api._jobs["24"] = SlurmJob(job_id="24", user="alice", state="PENDING", name="hops-probe-2-a100", reservation="hops-p2")
    enactor = Enactor(api, Journal(":memory:"), env_dir=tmp_path / "jobs", settle_timeout=0.2)
    assert sorted(enactor.evict_foreign(probes={"24"})) == sorted(foreign)
    assert all(api.get(j).reservation == "" for j in foreign)
    assert api.get("20").reservation == "maint,other" and api.get("21").reservation == "hops-j21"
    assert api.get("22").active  # the hook's own writing: an offered job runs on
    assert ("requeuehold", "23") in [c[:2] for c in api.calls] and ("requeuehold", "22") not in [c[:2] for c in api.calls]
    # the requeued one is detached once pending; a job named like a probe but not one of the engine's probes
    # is foreign in hops-p<id>
    api._jobs["25"] = SlurmJob(job_id="25", user="alice", state="PENDING", name="hops-probe-2-x", reservation="hops-p2")
    assert enactor.evict_foreign(probes={"24"}) == ["23", "25"]
