"""The backend interface's shared rules (hops_slurm/core/interface.py)."""

from __future__ import annotations

from hops_slurm.core.interface import seen_by_fragment_plan


def test_a_fragment_plan_sees_waiting_and_running_jobs_not_promised_ones() -> None:
    """The one rule both backends' ``job_views(fragment=True)`` follow."""
    assert seen_by_fragment_plan(running=False, started=False, promised=False)  # waiting: to place
    assert seen_by_fragment_plan(running=True, started=True, promised=False)  # running: context
    assert not seen_by_fragment_plan(running=False, started=False, promised=True)  # placed, its GPUs promised
    assert not seen_by_fragment_plan(running=False, started=True, promised=False)  # started, its view not yet
