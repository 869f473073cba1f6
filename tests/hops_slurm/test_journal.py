"""The enactment journal on real SQLite: intent before action, outcomes, crash leftovers, allocations."""

from __future__ import annotations

from pathlib import Path

import pytest

from hops_slurm.journal import DONE, FAILED, INTENDED, INTERRUPTED, Journal


class Crash(BaseException):
    """Stands for the process dying mid-action."""


def test_intent_is_committed_before_the_action_runs(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    journal = Journal(db)
    with journal.action("hold", "7", {"reason": "new"}, "r1") as action_id:
        seen = Journal(db).actions()  # another connection, as after a crash
        assert [(a.id, a.kind, a.job_id, a.status, a.args) for a in seen] == [(action_id, "hold", "7", INTENDED, {"reason": "new"})]
    assert journal.actions()[0].status == DONE and journal.actions()[0].finished is not None


def test_failure_is_recorded_and_propagates(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.db")
    with pytest.raises(RuntimeError), journal.action("release", "8"):
        raise RuntimeError("Slurm said no")
    (a,) = journal.actions()
    assert (a.status, a.error) == (FAILED, "Slurm said no")


def test_crash_leaves_intent_open_and_restart_marks_it_interrupted(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    journal = Journal(db)
    with journal.action("place", "9", {"config": {"a100-1": 2}}):
        pass
    with pytest.raises(Crash), journal.action("release", "9"):
        raise Crash()
    restarted = Journal(db)
    assert [a.kind for a in restarted.open_actions()] == ["release"]
    interrupted = restarted.mark_interrupted()
    assert [a.kind for a in interrupted] == ["release"]
    assert restarted.open_actions() == [] and restarted.actions(status=INTERRUPTED)[0].job_id == "9"
    assert restarted.last_done("9", "place").args == {"config": {"a100-1": 2}}
    assert restarted.last_done("9", "release") is None
    assert restarted.last_started("9", "release") == restarted.actions(status=INTERRUPTED)[0].created
    assert restarted.last_started("9", "requeuehold") is None


def test_allocations_are_kept(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.db")
    journal.record_allocation("5", {"v100-1": 3, "v100-2": 1}, {"v100-1": (0, 1, 2), "v100-2": (0,)}, True, "r2")
    journal.record_allocation("6", {"a100-1": 1}, {"a100-2": (3,)}, False)
    assert [(r["job_id"], r["matched"]) for r in journal.allocations()] == [("5", True), ("6", False)]
    assert journal.allocations("5")[0]["actual"] == {"v100-1": [0, 1, 2], "v100-2": [0]}


# ----- phases: the same action for many jobs, two transactions -------------------------------------
def test_a_phase_commits_every_intent_before_its_body_and_every_outcome_after(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    journal = Journal(db)
    before = journal.commits
    with journal.phase("release", [("1", {"config": {"n1": 1}}), ("2", {}), ("3", {})], "round1") as ph:
        seen = Journal(db).actions()  # another connection, as after a crash
        assert [(a.job_id, a.kind, a.status, a.round_id) for a in seen] == \
            [(j, "release", INTENDED, "round1") for j in ("1", "2", "3")]
        assert journal.commits == before + 1  # one transaction for the three intents
        ph.failed("2", "Invalid job id specified")
    after = {a.job_id: (a.status, a.error) for a in Journal(db).actions()}
    assert after == {"1": (DONE, ""), "2": (FAILED, "Invalid job id specified"), "3": (DONE, "")}
    assert journal.commits == before + 2 and ph.done == ["1", "3"]
    assert journal.actions(job_id="1")[0].args == {"config": {"n1": 1}}


def test_a_crash_inside_a_phase_leaves_all_of_it_intended_for_the_restart(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    journal = Journal(db)
    with pytest.raises(Crash), journal.phase("hold", [("1", {}), ("2", {})]):
        raise Crash()
    restarted = Journal(db)
    assert [a.job_id for a in restarted.mark_interrupted()] == ["1", "2"]
    assert {a.status for a in restarted.actions()} == {INTERRUPTED}


def test_an_error_inside_a_phase_marks_the_rest_failed_and_propagates(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.db")
    with pytest.raises(OSError, match="disk full"), journal.phase("env", [("1", {}), ("2", {})]) as ph:
        ph.failed("1", "cannot write")
        raise OSError("disk full")
    assert {a.job_id: a.error for a in journal.actions()} == {"1": "cannot write", "2": "disk full"}
    assert {a.status for a in journal.actions()} == {FAILED}


def test_a_phase_names_each_job_once(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.db")
    with pytest.raises(ValueError, match="each job once"), journal.phase("hold", [("1", {}), ("1", {})]):
        pass
    assert journal.actions() == []


def test_allocations_of_many_jobs_are_one_transaction(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.db")
    before = journal.commits
    journal.record_allocations([("1", {"n1": 1}, {"n1": (0,)}, True), ("2", {"n1": 2}, {"n2": (0, 1)}, False)], "r")
    assert journal.commits == before + 1
    assert [(a["job_id"], a["matched"], a["actual"]) for a in journal.allocations()] == \
        [("1", True, {"n1": [0]}), ("2", False, {"n2": [0, 1]})]


def test_last_of_and_last_started_answer_what_the_whole_history_says(tmp_path: Path) -> None:
    """``last_of`` is the last action of the kinds asked for in the job's history (any status); ``last_started``,
    kept between writes, follows each new action and outcome."""
    j = Journal(tmp_path / "j.sqlite")
    clock = iter(float(t) for t in range(100, 200))
    j.clock = lambda: next(clock)
    assert j.last_of("7", ("release", "hold")) is None and j.last_started("7", "requeuehold") is None
    with j.action("hold", "7"):
        pass
    with j.action("env", "7"):
        pass
    with j.action("release", "7"):
        pass
    with j.action("release", "8"):
        pass
    last = j.last_of("7", ("release", "hold", "place"))
    history = [a for a in j.actions(job_id="7") if a.kind in ("release", "hold", "place")]
    assert last is not None and (last.id, last.kind, last.status) == (history[-1].id, "release", DONE)
    with pytest.raises(RuntimeError):
        with j.action("requeuehold", "7"):
            raise RuntimeError("scontrol failed")
    assert j.last_started("7", "requeuehold") is None  # a failed one does not count
    with j.action("requeuehold", "7"):
        first = j.last_started("7", "requeuehold")  # intended: counts already
    assert first is not None and j.last_started("7", "requeuehold") == first
    with j.action("requeuehold", "7"):
        pass
    assert j.last_started("7", "requeuehold") > first  # a newer one, seen at once
