"""Engine pieces without Slurm: wait/run accounting, the state database across reopen, the lock, the
fallback job view and the queue output. Expected values are computed by hand in the comments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hops_slurm.engine.known_jobs import known_job
from hops_slurm.core.jobview import FALLBACK_AGE, NO_ESTIMATE, fallback_throughput, job_view
from hops_slurm.engine.lock import EngineLocked, InstanceLock
from hops_slurm.engine.queue import fmt_duration, parse_format, queue_rows, render
from hops_slurm.engine.state import PROFILE_DONE, EngineState, JobState, account
from hops_slurm.errors import HopsError
from hops_slurm.slurm.api import SlurmJob

DIRECTIVES = "gpus=1,2,4 samples=1000000 batch-size=8 model=resnet18 lr=0.1@4"


def _job(job_id: str = "7", t: float = 1000.0) -> JobState:
    return JobState(job_id=job_id, name="train", user="alice", directives=DIRECTIVES, submit_time=t,
                    first_seen=t, last_seen=t, last_state="PENDING")


def test_wait_sums_pending_time_over_a_preemption() -> None:
    js = _job()
    account(js, 1010.0, "PENDING", {})  # pending 1000..1010: wait 10
    account(js, 1030.0, "RUNNING", {"a": 2})  # still pending until seen running at 1030: wait 30
    account(js, 1050.0, "RUNNING", {"a": 2})  # ran 20 s on 2 GPUs: run 20, 40 GPU-s
    account(js, 1060.0, "PENDING", {})  # preempted (seen at 1060): run 30, 60 GPU-s
    account(js, 1075.0, "RUNNING", {"b": 1})  # pending 1060..1075: wait 30 + 15 = 45
    account(js, 1080.0, "RUNNING", {"b": 1})  # run 35, GPU-s 65
    assert (js.wait, js.run_time, js.gpu_seconds) == (45.0, 35.0, 65.0)
    assert js.first_start == 1030.0
    assert [(p["start"], p["end"], p["config"], p.get("preempted")) for p in js.placements] == [
        (1030.0, 1060.0, {"a": 2}, True), (1075.0, None, {"b": 1}, None)]


def test_a_start_between_refreshes_is_dated_by_slurms_start_time() -> None:
    js = _job()  # pending since 1000
    account(js, 1030.0, "RUNNING", {"a": 2}, started=1012.0)  # wait 12, run 18 on 2 GPUs: 36 GPU-s
    assert (js.wait, js.run_time, js.gpu_seconds, js.first_start) == (12.0, 18.0, 36.0, 1012.0)
    account(js, 1050.0, "ENDED", {}, started=1012.0, ended=1041.0)  # ran until 1041: run 29, GPU-s 58
    assert (js.wait, js.run_time, js.gpu_seconds) == (12.0, 29.0, 58.0)
    assert js.placements == [{"start": 1012.0, "end": 1041.0, "config": {"a": 2}, "preempted": False}]


def test_a_run_that_began_and_ended_between_two_refreshes_is_one_placement() -> None:
    js = _job()  # pending since 1000; released on {"a": 2}, started 1005, done 1020, noticed at 1030
    account(js, 1030.0, "ENDED", {}, started=1005.0, ended=1020.0, ran={"a": 2})
    assert (js.wait, js.run_time, js.gpu_seconds, js.first_start) == (5.0, 15.0, 30.0, 1005.0)
    assert js.placements == [{"start": 1005.0, "end": 1020.0, "config": {"a": 2}, "preempted": False}]


def test_a_run_released_just_after_a_refresh_and_ended_before_the_next_keeps_its_placement() -> None:
    js = _job()
    account(js, 1000.4, "PENDING", {})  # the refresh that planned it; released at 1000.6, Slurm says start 1000
    account(js, 1030.0, "ENDED", {}, started=1000.0, ended=1020.0, ran={"a": 2})
    assert js.first_start == 1000.4 and js.run_time == pytest.approx(19.6) and js.gpu_seconds == pytest.approx(39.2)
    assert [(p["start"], p["end"], p["config"]) for p in js.placements] == [(1000.4, 1020.0, {"a": 2})]


def test_a_job_cancelled_while_pending_has_no_placement() -> None:
    js = _job()  # Slurm sets start_time = end_time for a job that never ran
    account(js, 1030.0, "ENDED", {}, started=1025.0, ended=1025.0, ran={"a": 2})
    assert (js.wait, js.run_time, js.placements, js.first_start) == (30.0, 0.0, [], None)


def test_a_restart_between_refreshes_on_the_same_config_counts_as_a_preemption() -> None:
    js = _job()
    account(js, 1000.0, "RUNNING", {"a": 2}, started=1000.0)
    account(js, 1030.0, "RUNNING", {"a": 2}, started=1020.0)  # requeued and started again at 1020
    account(js, 1040.0, "RUNNING", {"b": 4}, started=1035.0)  # and moved to b at 1035
    assert [(p["start"], p["end"], p["config"], p.get("preempted")) for p in js.placements] == [
        (1000.0, 1020.0, {"a": 2}, True), (1020.0, 1035.0, {"a": 2}, True), (1035.0, None, {"b": 4}, None)]
    # run time 40; GPU-seconds 2 x 35 + 4 x 5 (the pending gaps inside a refresh interval are not seen)
    assert (js.run_time, js.gpu_seconds) == (40.0, 90.0)


def test_state_survives_reopen(tmp_path: Path) -> None:
    db = EngineState(tmp_path / "engine.sqlite")
    js = _job()
    account(js, 1012.5, "PENDING", {})
    js.profile, js.signature, js.age = PROFILE_DONE, "abc", 321.0
    js.probes = {"v100": {"status": "done", "slurm_id": "9"}}
    db.save(js)
    db.remember_model("resnet18|b8|tiny", "abc", ["v100", "a100"])
    db.close()
    again = EngineState(tmp_path / "engine.sqlite")
    back = again.get("7")
    assert back == js
    assert again.known_model("resnet18|b8|tiny") == ("abc", ["a100", "v100"])
    js.ended = 2000.0
    again.save(js)
    assert again.jobs() == {} and list(again.jobs(active_only=False)) == ["7"]


def test_second_lock_is_refused_with_the_owner_named(tmp_path: Path) -> None:
    first = InstanceLock(tmp_path / "engine.lock").acquire()
    with pytest.raises(EngineLocked, match=r"another hops-slurm engine \(pid \d+\)"):
        InstanceLock(tmp_path / "engine.lock").acquire()
    first.release()
    InstanceLock(tmp_path / "engine.lock").acquire().release()  # free again


def test_fallback_view_is_linear_in_gpus_and_uses_the_given_age() -> None:
    js = _job()
    view = job_view(known_job(js, None), NO_ESTIMATE, 1100.0, fallback_age=FALLBACK_AGE)
    assert view.throughput({"a": 2, "b": 1}) == pytest.approx(3.0 ** 0.5) == fallback_throughput({"a": 2, "b": 1})
    assert view.age == FALLBACK_AGE and view.sensitivity == 1.0
    assert view.wait == 100.0  # pending since it was last seen at 1000
    assert view.requirements == (1, 2, 4) and view.total_samples == 1_000_000


def test_queue_rows_sorted_by_priority_and_rendered(tmp_path: Path) -> None:
    db = EngineState(tmp_path / "engine.sqlite")
    a, b = _job("7"), _job("8")
    a.placements = [{"start": 10.0, "end": 20.0, "config": {"a100-1": 2}, "preempted": True, "cause": "requeued"}]
    for js, age in ((a, 100.0), (b, 400.0)):
        js.profile, js.age = PROFILE_DONE, age
        db.save(js)
    db.set_meta("last_plan", json.dumps({"time": 1.0, "priorities": {"7": 0.5, "8": 2.0}, "window": ["8"],
                                         "assignments": {"7": None, "8": {"a100-1": 4}}}))
    jobs = [SlurmJob(job_id="7", state="PENDING", priority=0), SlurmJob(job_id="8", state="PENDING", priority=0)]
    rows = queue_rows(db, jobs, now=1200.0)
    # wait = 200 s for both (last seen 1000); LR = wait / age: 200/100 = 2.0 and 200/400 = 0.5
    assert [(r.jobid, r.priority, r.lr, r.window, r.plan) for r in rows] == [
        ("8", 2.0, 0.5, True, "a100-1:4"), ("7", 0.5, 2.0, False, "-")]
    text = render(rows, parse_format("jobid,lr,wait,plan"), parsable=True)
    assert text.splitlines() == ["JOBID|LR|WAIT|PLAN", "8|0.500|00:03:20|a100-1:4", "7|2.000|00:03:20|-"]
    assert render(rows, ("jobid",), parsable=True, header=False) == "8\n7"
    # how often and why Hops stopped each job's runs, as the users' view shows them
    assert render(rows, parse_format("jobid,preemptions,preempted"), parsable=True).splitlines() == [
        "JOBID|PREEMPTIONS|LAST_PREEMPTED", "8|0|-", "7|1|requeued"]
    assert json.loads(render(rows, ("jobid", "estrun"), as_json=True)) == {"jobs": [{"jobid": "8", "estrun": 400.0},
                                                                                     {"jobid": "7", "estrun": 100.0}]}
    with pytest.raises(HopsError, match="age is now estrun .*sprio's AGE"):
        parse_format("jobid,age")
    with pytest.raises(HopsError, match="unknown field"):
        parse_format("jobid,bogus")
    assert fmt_duration(90061) == "1-01:01:01"


def test_queue_shows_why_no_configuration_serves_a_job(tmp_path: Path) -> None:
    db = EngineState(tmp_path / "engine.sqlite")
    js = _job("9")
    js.profile, js.age = PROFILE_DONE, 100.0
    db.save(js)
    why = "no configuration serves it: every placement of 4 GPU(s) on v100 is estimated at throughput 0"
    db.set_meta("last_plan", json.dumps({"time": 1.0, "priorities": {}, "window": [], "assignments": {"9": None},
                                         "unservable": {"9": why}}))
    (row,) = queue_rows(db, [SlurmJob(job_id="9", state="PENDING", priority=0)], now=1100.0)
    assert row.plan == f"unservable: {why}" and not row.window


def test_jobs_load_in_submit_then_numeric_id_order(tmp_path: Path) -> None:
    db = EngineState(tmp_path / "engine.sqlite")
    for job_id in ("1000", "999", "12"):  # one submit second: as text "1000" < "12" < "999"
        db.save(_job(job_id, 500.0))
    db.save(_job("5", 600.0))
    assert list(db.jobs()) == ["12", "999", "1000", "5"]


def test_a_second_job_of_a_model_being_probed_waits_in_a_new_process(tmp_path: Path) -> None:
    """``plan --once`` is a new process each time: which job probes for a model must come from the saved
    states, else the second job of the model submits probes of its own (it calls no sbatch here: it
    returns before that, so no Slurm is needed)."""
    from estimator.store import ThroughputStore
    from hops_slurm.engine.profiling import ProbeSettings, ProfilerFlow
    from hops_slurm.engine.state import PROFILE_NEW, PROFILE_PROBING

    db = EngineState(tmp_path / "engine.sqlite")
    first, second = _job("41"), _job("42")
    first.profile = PROFILE_PROBING
    first.probes = {"a100": {"status": "running", "slurm_id": "900"}}
    store = ThroughputStore(tmp_path / "store.sqlite")
    flow = ProfilerFlow(ProbeSettings(tmp_path / "probes", size="tiny"), db, store)
    flow.adopt([second, first])
    # the second job is looked at before the first (as when Slurm lists it first): it waits
    assert flow.advance(second, ["a100"], {}) is False
    assert second.profile == PROFILE_NEW and second.probes == {}
    assert not (tmp_path / "probes").exists()  # nothing was written for a probe of its own
