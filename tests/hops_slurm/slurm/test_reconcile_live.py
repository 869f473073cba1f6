"""Crash in the middle of enacting a round, then reconcile on restart (live minicluster).

The crash is simulated by a backend that performs real Slurm operations and then "dies" (raises a
BaseException, as a SIGKILL would stop the engine) at a chosen call, either before or after Slurm has
carried it out, so the journal is left with an intent whose outcome it does not know.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from hops_slurm.journal import Journal
from hops_slurm.tools.minicluster.cluster import Minicluster
from hops_slurm.slurm.cli import CliSlurm
from hops_slurm.slurm.enact import GATE, Enactor, job_reservation, reservation_job
from hops_slurm.slurm.reconcile import reconcile

pytestmark = pytest.mark.slurm


class Killed(BaseException):
    """The engine process died."""


class DyingSlurm(CliSlurm):
    """The CLI backend, killed at the ``nth`` call of ``method`` (``after``: once Slurm has carried it out)."""

    def __init__(self, env: Mapping[str, str], method: str, nth: int, after: bool) -> None:
        super().__init__(env)
        self.method, self.nth, self.after, self.seen = method, nth, after, 0

    def _mutate(self, fn, *args, name: str = "") -> None:  # noqa: ANN001
        name = name or fn.__name__
        if name == self.method:
            self.seen += 1
        dies = name == self.method and self.seen == self.nth
        if dies and not self.after:
            raise Killed()
        fn(*args)
        if dies:
            raise Killed()

    def hold(self, job_id: str) -> None:
        self._mutate(super().hold, job_id)

    def release(self, job_id: str) -> None:
        self._mutate(super().release, job_id)

    def requeue_hold(self, job_id: str) -> None:
        self._mutate(super().requeue_hold, job_id)

    def update_job(self, job_id: str, fields: dict[str, str]) -> None:
        self._mutate(super().update_job, job_id, fields)

    # the list forms (hops_slurm.slurm.batch): one command for many jobs, counted as one call of the method
    def hold_all(self, job_ids: list[str]) -> None:
        self._mutate(super().hold_all, job_ids, name="hold")

    def release_all(self, job_ids: list[str]) -> None:
        self._mutate(super().release_all, job_ids, name="release")

    def requeue_hold_all(self, job_ids: list[str]) -> None:
        self._mutate(super().requeue_hold_all, job_ids, name="requeue_hold")

    def update_job_all(self, job_ids: list[str], fields: dict[str, str]) -> None:
        self._mutate(super().update_job_all, job_ids, fields, name="update_job")

    def create_reservation(self, name: str, nodes: list[str], users: list[str], flags: list[str]) -> None:
        self._mutate(super().create_reservation, name, nodes, users, flags)

    def delete_reservation(self, name: str) -> None:
        self._mutate(super().delete_reservation, name)

    # the script forms (hops_slurm.slurm.batch.run_each): one scontrol for every job's own change, counted as
    # one call of the method. Killed "after", the engine dies while scontrol works through the script: the
    # changes before the last are carried out, the last never is (the child dies with the engine).
    def _script(self, fn, items: list[tuple[object, ...]], name: str) -> list[str | None] | None:  # noqa: ANN001
        if name == self.method:
            self.seen += 1
        if name != self.method or self.seen != self.nth:
            return fn(items)
        if self.after:
            fn(items[:max(1, len(items) - 1)])
        raise Killed()

    def update_job_each(self, changes: list[tuple[str, dict[str, str]]]) -> list[str | None] | None:
        return self._script(super().update_job_each, changes, "update_job")

    def create_reservation_each(self, specs: list[tuple[str, list[str], list[str], list[str]]]) -> list[str | None] | None:
        return self._script(super().create_reservation_each, specs, "create_reservation")

    def delete_reservation_each(self, names: list[tuple[str]]) -> list[str | None] | None:
        return self._script(super().delete_reservation_each, names, "delete_reservation")


def check_consistent(api: CliSlurm, journal: Journal, job_ids: list[str]) -> None:
    """Every job running or pending exactly once; running jobs detached (or started from a placement
    completed before the crash, on exactly that placement); pending ones held, or released
    into their own complete reservation; no other per-job reservation; the gate in place; no open intent."""
    listed = [j for j in api.jobs() if j.job_id in job_ids]
    assert sorted(j.job_id for j in listed) == sorted(job_ids)  # exactly once each
    resv = {r.name: r for r in api.reservations()}
    needed = set()
    for job in listed:
        assert job.state in ("RUNNING", "PENDING"), job
        own = job_reservation(job.job_id)
        if job.state == "RUNNING":
            if job.reservation:  # released before the crash and started since: settled by the next round
                planned = journal.last_done(job.job_id, "release")
                assert job.reservation == own and planned is not None and job.gpu_config() == planned.args["config"], job
                needed.add(own)
        elif job.held:
            assert job.reservation == "" and job.reason == "JobHeldAdmin", job
        else:
            assert job.reservation == own and own in resv, job
            planned = journal.last_done(job.job_id, "release")
            assert planned is not None and set(resv[own].nodes) == set(planned.args["config"])
            needed.add(own)
    assert {n for n in resv if reservation_job(n)} == needed
    assert GATE in resv
    assert journal.open_actions() == []


# Round r2: hold the new jobs c, d; requeuehold a; then, each a journal phase over a, c, d: reserve,
# place (with the attach), env, release (one command each: reserve and place one scontrol reading every
# job's command from its standard input); then settle the started jobs (one detach command, one scontrol
# for the unreserves). A crash leaves the whole phase in flight open: every interrupted action is of its kind.
@pytest.mark.parametrize(("method", "nth", "after", "step"), [
    ("requeue_hold", 1, True, "requeuehold"),  # a stopped, nothing placed yet
    ("create_reservation", 1, True, "reserve"),  # killed mid-script: a's and c's reservations made, not d's
    ("create_reservation", 1, False, "reserve"),  # killed before the script: no reservation made
    ("update_job", 1, True, "place"),  # killed mid-script: a and c placed and attached, not d
    ("release", 1, True, "release"),  # all released (they may start), the journal does not know
    ("delete_reservation", 1, True, "unreserve"),  # killed mid-script: some reservations deleted, not all
    ("delete_reservation", 1, False, "unreserve"),  # all released and detached, their reservations left
])
def test_killed_mid_round_then_reconciled(method: str, nth: int, after: bool, step: str, minicluster: Minicluster,
                                          api: CliSlurm, submit, live, tmp_path: Path) -> None:  # noqa: ANN001
    db = tmp_path / "journal.db"
    journal = Journal(db)
    setup = Enactor(api, journal, env_dir=tmp_path / "env", settle_timeout=15.0)
    a, b, c, d = submit(), submit(), submit(), submit()
    first = setup.apply({a: {"a100-1": 4}, b: {"v100-1": 2}}, round_id="r1")
    assert sorted(first.verified) == sorted([a, b]), (first, api.job(b))

    plan = {a: {"a100-1": 2, "a100-2": 2}, b: {"v100-1": 2}, c: {"v100-2": 4}, d: {"a100-2": 6}}
    dying = Enactor(DyingSlurm(minicluster.env(), method, nth, after), journal, env_dir=tmp_path / "env", settle_timeout=15.0)
    with pytest.raises(Killed):
        dying.apply(plan, round_id="r2")

    restarted = Journal(db)
    report = reconcile(api, restarted)
    assert [x.id for x in report.interrupted] == [x.id for x in journal.actions(status="interrupted")]
    assert report.interrupted and {x.kind for x in report.interrupted} == {step}  # the phase in flight
    check_consistent(api, restarted, [a, b, c, d])

    # the restarted engine enacts the round again: everything ends where the plan says
    again = Enactor(api, restarted, env_dir=tmp_path / "env", settle_timeout=15.0).apply(plan, round_id="r2-again")
    assert not again.refused and not again.mismatched
    for job_id, config in plan.items():
        # released into its reservation, a job may still be starting when apply's settle window ends
        job = live.wait_job(api, job_id, lambda j: j.state == "RUNNING", timeout=30.0)
        assert job.gpu_config() == config, job
    check_consistent(api, restarted, [a, b, c, d])
