"""RetryingReads: reads and idempotent changes get one more try; other changes never do."""

from __future__ import annotations

import pytest

from hops_slurm.engine.retry import RetryingReads
from hops_slurm.slurm.api import SlurmCommandError


class FailingEveryNth:
    """A stand-in for the Slurm adapter (no Slurm here): every ``n``-th call fails, as the live fault
    injector's scontrol does; records what was carried out."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.calls = 0
        self.done: list[tuple[str, str]] = []

    def _call(self, what: str, job_id: str) -> None:
        self.calls += 1
        if self.calls % self.n == 0:
            raise SlurmCommandError(["scontrol", what, job_id], 1, f"fault injector: call {self.calls} refused")
        self.done.append((what, job_id))

    def hold(self, job_id: str) -> None:
        self._call("hold", job_id)

    def release(self, job_id: str) -> None:
        self._call("release", job_id)

    def update_job(self, job_id: str, fields: dict[str, str]) -> None:
        self._call("update", job_id)

    def requeue_hold(self, job_id: str) -> None:
        self._call("requeuehold", job_id)


def test_a_placement_of_n_idempotent_steps_is_not_livelocked_by_a_failure_every_n_calls() -> None:
    inner = FailingEveryNth(3)
    api = RetryingReads(inner, pause=0)  # type: ignore[arg-type]
    for attempt in range(4):  # each attempt: three steps, as many as the failure period
        api.update_job("1", {"Reservation": ""})
        api.hold("1")
        api.release("1")
    assert inner.done.count(("release", "1")) == 4  # every attempt completed


def test_changes_that_are_not_idempotent_are_never_repeated() -> None:
    inner = FailingEveryNth(1)
    api = RetryingReads(inner, pause=0)  # type: ignore[arg-type]
    with pytest.raises(SlurmCommandError):
        api.requeue_hold("7")
    assert inner.calls == 1


def test_a_second_failure_still_raises() -> None:
    inner = FailingEveryNth(1)
    api = RetryingReads(inner, pause=0)  # type: ignore[arg-type]
    with pytest.raises(SlurmCommandError):
        api.update_job("7", {"Comment": "x"})
    assert inner.calls == 2


def test_the_list_and_script_forms_of_the_backend_are_handed_through_untried_again() -> None:
    """The engine's wrapper offers the backend's list forms (``hold_all``) and script forms
    (``update_job_each``: many different changes in one scontrol) so the enactor can batch through it; a
    backend without them has none through the wrapper either (the enactor then goes job by job)."""
    class Scripts(FailingEveryNth):
        def update_job_each(self, changes: list[tuple[str, dict[str, str]]]) -> list[str | None]:
            for job_id, _fields in changes:
                self._call("update", job_id)
            return [None] * len(changes)

    inner = Scripts(100)
    api = RetryingReads(inner, pause=0)  # type: ignore[arg-type]
    assert api.update_job_each([("1", {"A": "1"}), ("2", {"A": "2"})]) == [None, None]
    assert inner.done == [("update", "1"), ("update", "2")]
    assert not hasattr(RetryingReads(FailingEveryNth(3), pause=0), "create_reservation_each")  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        api._secret_each  # noqa: B018 - private names are never handed through
