"""Slurm changes for many jobs (:mod:`hops_slurm.slurm.batch`): one list command where the backend has one,
each job on its own when Slurm refuses the list or the backend has no list form."""

from __future__ import annotations

import pytest

from hops_slurm.slurm.api import SlurmCommandError
from hops_slurm.slurm.batch import CHUNK, run_batch


class Lists:
    """A backend with list forms; ``refuse``: job ids Slurm does not know (their commands fail)."""

    def __init__(self, refuse: set[str] = frozenset(), lists: bool = True) -> None:  # type: ignore[assignment]
        self.refuse = refuse
        self.calls: list[tuple[str, str]] = []
        if not lists:
            self.hold_all = None  # type: ignore[assignment]

    def _do(self, what: str, ids: list[str]) -> None:
        self.calls.append((what, ",".join(ids)))
        bad = [j for j in ids if j in self.refuse]
        if bad:
            raise SlurmCommandError(["scontrol", what, ",".join(ids)], 1, f"Invalid job id specified for job {bad[0]}")

    def hold(self, job_id: str) -> None:
        self._do("hold", [job_id])

    def hold_all(self, job_ids: list[str]) -> None:  # noqa: F811 - replaced by None without list forms
        self._do("hold", job_ids)

    def update_job(self, job_id: str, fields: dict[str, str]) -> None:
        self._do("update " + " ".join(f"{k}={v}" for k, v in fields.items()), [job_id])

    def update_job_all(self, job_ids: list[str], fields: dict[str, str]) -> None:
        self._do("update " + " ".join(f"{k}={v}" for k, v in fields.items()), job_ids)


def test_one_command_for_many_jobs() -> None:
    api = Lists()
    assert run_batch(api, "hold", ["1", "2", "3"]) == {}  # type: ignore[arg-type]
    assert api.calls == [("hold", "1,2,3")]
    assert run_batch(api, "update_job", ["4", "5"], {"Reservation": ""}) == {}  # type: ignore[arg-type]
    assert api.calls[-1] == ("update Reservation=", "4,5")


def test_a_refused_list_is_tried_job_by_job_and_each_job_gets_its_own_outcome() -> None:
    api = Lists(refuse={"2"})
    errors = run_batch(api, "hold", ["1", "2", "3"])  # type: ignore[arg-type]
    assert list(errors) == ["2"] and "Invalid job id" in errors["2"]
    assert api.calls == [("hold", "1,2,3"), ("hold", "1"), ("hold", "2"), ("hold", "3")]


def test_a_backend_without_list_forms_gets_one_call_per_job() -> None:
    api = Lists(lists=False)
    assert run_batch(api, "hold", ["1", "2"]) == {}  # type: ignore[arg-type]
    assert api.calls == [("hold", "1"), ("hold", "2")]


def test_long_lists_are_cut_into_chunks() -> None:
    api = Lists()
    ids = [str(i) for i in range(CHUNK + 3)]
    assert run_batch(api, "hold", ids) == {}  # type: ignore[arg-type]
    assert [len(c[1].split(",")) for c in api.calls] == [CHUNK, 3]


def test_an_unknown_operation_is_refused() -> None:
    with pytest.raises(ValueError, match="no batched Slurm operation 'cancel'"):
        run_batch(Lists(), "cancel", ["1"])  # type: ignore[arg-type]


def test_the_cli_backend_runs_the_list_forms_slurm_documents() -> None:
    from hops_slurm.slurm.cli import CliSlurm

    ran: list[list[str]] = []

    class Recording(CliSlurm):
        def _run(self, argv: list[str], stdin: str | None = None) -> str:
            ran.append(argv)
            return ""

    api = Recording(env={})
    api.hold_all(["1", "2"])
    api.release_all(["1", "2"])
    api.requeue_hold_all(["3", "4"])
    api.update_job_all(["5", "6"], {"Reservation": ""})
    assert ran == [["scontrol", "hold", "1,2"], ["scontrol", "release", "1,2"],
                   ["scontrol", "requeuehold", "Incomplete", "3,4"], ["scontrol", "update", "JobId=5,6", "Reservation="]]
