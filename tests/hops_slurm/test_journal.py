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
