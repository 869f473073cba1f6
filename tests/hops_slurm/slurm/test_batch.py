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


# ----- per-job changes in one process (run_each, CliSlurm.script) --------------------------------------
class Scripts:
    """A backend with script forms: ``refuse`` keys fail; ``attribute``: whether its script's outcomes can be
    told apart (else it returns None and has done every change it could)."""

    def __init__(self, refuse: set[str] = frozenset(), attribute: bool = True,  # type: ignore[assignment]
                 reservations: tuple[str, ...] = ()) -> None:
        self.refuse = refuse
        self.attribute = attribute
        self.calls: list[tuple[str, int]] = []
        self.made: dict[str, tuple[str, ...]] = {r: ("n1",) for r in reservations}

    def reservations(self) -> list[object]:
        from hops_slurm.slurm.api import SlurmReservation
        return [SlurmReservation(name=n, nodes=nodes) for n, nodes in self.made.items()]

    def update_job(self, job_id: str, fields: dict[str, str]) -> None:
        self.calls.append(("update", 1))
        if job_id in self.refuse:
            raise SlurmCommandError(["scontrol", "update"], 1, f"Invalid job id specified for {job_id}")

    def create_reservation(self, name: str, nodes: list[str], users: list[str], flags: list[str]) -> None:
        self.calls.append(("create", 1))
        if name in self.made:
            raise SlurmCommandError(["scontrol", "create"], 1, "Duplicate reservation name")
        if name in self.refuse:
            raise SlurmCommandError(["scontrol", "create"], 1, "Requested nodes are busy")
        self.made[name] = tuple(nodes)

    def delete_reservation(self, name: str) -> None:
        self.calls.append(("delete", 1))
        if name not in self.made:
            raise SlurmCommandError(["scontrol", "delete"], 1, "Requested reservation is invalid")
        del self.made[name]

    def _script(self, single: str, items: list[tuple[object, ...]]) -> list[str | None] | None:
        self.calls.append((single, len(items)))
        out: list[str | None] = []
        for args in items:
            try:
                getattr(self, single)(*args)
                out.append(None)
            except SlurmCommandError as exc:
                out.append(str(exc))
            self.calls.pop()
        return out if self.attribute else None

    def update_job_each(self, items: list[tuple[object, ...]]) -> list[str | None] | None:
        return self._script("update_job", items)

    def create_reservation_each(self, items: list[tuple[object, ...]]) -> list[str | None] | None:
        return self._script("create_reservation", items)

    def delete_reservation_each(self, items: list[tuple[object, ...]]) -> list[str | None] | None:
        return self._script("delete_reservation", items)


def test_different_changes_to_many_jobs_are_one_script_and_each_gets_its_outcome() -> None:
    from hops_slurm.slurm.batch import run_each

    api = Scripts(refuse={"2"})
    errors = run_each(api, "update_job", {j: (j, {"NodeList": f"n{j}"}) for j in ("1", "2", "3")})  # type: ignore[arg-type]
    assert list(errors) == ["2"] and "Invalid job id" in errors["2"]
    assert api.calls == [("update_job", 3)]


def test_outcomes_that_cannot_be_attributed_are_made_again_without_repeating_reservations() -> None:
    """A failed script whose output names no command: updates are made again (the same update twice is
    harmless); a reservation that exists on the asked nodes counts as made, one that is gone as deleted."""
    from hops_slurm.slurm.batch import run_each

    api = Scripts(refuse={"hops-j2"}, attribute=False)
    errors = run_each(api, "create_reservation",  # type: ignore[arg-type]
                      {j: (f"hops-j{j}", ["n1"], ["alice"], []) for j in ("1", "2", "3")})
    assert list(errors) == ["2"] and "busy" in errors["2"]
    assert api.calls == [("create_reservation", 3), ("create", 1)]  # only hops-j2 again
    assert sorted(api.made) == ["hops-j1", "hops-j3"]
    api.calls.clear()
    assert run_each(api, "delete_reservation", {"1": ("hops-j1",), "3": ("hops-j3",)}) == {}  # type: ignore[arg-type]
    assert api.calls == [("delete_reservation", 2)] and api.made == {}
    api.calls.clear()
    assert run_each(api, "update_job", {"1": ("1", {}), "3": ("3", {})}) == {}  # type: ignore[arg-type]
    assert api.calls == [("update_job", 2), ("update", 1), ("update", 1)]


def test_a_backend_without_scripts_gets_one_call_per_change() -> None:
    from hops_slurm.slurm.batch import run_each

    api = Lists(refuse={"5"})
    errors = run_each(api, "update_job", {"4": ("4", {"A": "1"}), "5": ("5", {"A": "2"})})  # type: ignore[arg-type]
    assert list(errors) == ["5"] and api.calls == [("update A=1", "4"), ("update A=2", "5")]
    with pytest.raises(ValueError, match="no per-job Slurm operation 'hold'"):
        run_each(api, "hold", {"1": ("1",)})  # type: ignore[arg-type]


def test_scontrol_output_is_attributed_to_the_command_it_followed() -> None:
    """What 22.05's scontrol prints reading commands from a pipe (standard output and error together):
    each command echoed after its prompt, then its messages; a created reservation's line is success."""
    from hops_slurm.slurm.cli import script_outcomes

    commands = [["update", "JobId=1", "NodeList=a"], ["update", "JobId=999", "NodeList=a"],
                ["create", "reservation", "ReservationName=hops-j3"], ["delete", "ReservationName=hops-j7"]]
    out = ("scontrol: update JobId=1 NodeList=a\n"
           "scontrol: update JobId=999 NodeList=a\n"
           "scontrol: error: Could not load state information for job 999: Invalid job id specified\n"
           "scontrol: create reservation ReservationName=hops-j3\nReservation created: hops-j3\n"
           "scontrol: delete ReservationName=hops-j7\n"
           "delete_reservation ReservationName=hops-j7: Requested reservation is invalid\nscontrol: quit\n")
    got = script_outcomes(commands, out)
    assert got is not None and got[0] is None and got[2] is None
    assert "Invalid job id" in (got[1] or "") and "reservation is invalid" in (got[3] or "")
    assert script_outcomes(commands, "Invalid job id specified\n") is None  # no echo: not attributable
    assert script_outcomes(commands, out.replace("scontrol: update JobId=999 NodeList=a\n", "")) is None


def test_only_plain_words_go_into_an_scontrol_script() -> None:
    """A value with white space, a quote, ``#``, a backslash or a control character would change what
    scontrol reads (a second command on a new line): such a change is refused as a script, nothing run."""
    from hops_slurm.slurm.cli import CliSlurm, script_safe

    assert script_safe(["update", "JobId=5", "Reservation=", "TresPerNode=gres:gpu:a100:2", "NodeList=a100-[1-2]"])
    for bad in ["Users=al ice", "Users=a\nquit", 'Users="x"', "Users=x'", "Users=#x", "Users=a\\b", "Users=\x07", ""]:
        assert not script_safe(["create", "reservation", bad]), bad
    ran: list[str] = []

    class Recording(CliSlurm):
        def _run(self, argv: list[str], stdin: str | None = None) -> str:
            ran.append(" ".join(argv))
            return ""

    with pytest.raises(ValueError, match="not a safe scontrol script line"):
        Recording(env={}).create_reservation_each([("hops-j1", ["a"], ["bad user"], [])])
    assert ran == []


def test_the_cli_backend_runs_a_script_through_one_scontrol_process(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``CliSlurm.script`` feeds one ``scontrol`` (here a stand-in on ``PATH`` that answers as 22.05 does:
    each line echoed after its prompt, a message for a job it does not know, exit 1) and reads each
    command's outcome; an exit 0 means every command was carried out."""
    from hops_slurm.slurm.cli import CliSlurm

    fake = tmp_path / "scontrol"
    fake.write_text("#!/bin/bash\nrc=0\nwhile read -r line; do echo \"scontrol: $line\"; "
                    "case \"$line\" in *JobId=9*) echo 'Invalid job id specified' >&2; rc=1;; esac; "
                    "[ \"$line\" = quit ] && break; done\nexit $rc\n")
    fake.chmod(0o755)
    api = CliSlurm(env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert api.update_job_each([("1", {"NodeList": "a"}), ("2", {"NodeList": "b"})]) == [None, None]
    got = api.update_job_each([("1", {"NodeList": "a"}), ("9", {"NodeList": "b"})])
    assert got is not None and got[0] is None and "JobId=9" in (got[1] or "") and "Invalid job id" in (got[1] or "")
    assert api.calls == {"scontrol update (stdin)": 2}


def test_a_script_s_scontrol_dies_with_the_engine(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The engine SIGKILLed while scontrol works through a script: scontrol is killed too (Linux
    PR_SET_PDEATHSIG), so it does not go on changing Slurm after a restarted engine has reconciled."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    fake = tmp_path / "scontrol"
    fake.write_text(f"#!/bin/bash\necho $$ > {tmp_path}/pid\nexec sleep 60\n")
    fake.chmod(0o755)
    engine = subprocess.Popen([sys.executable, "-c", "from hops_slurm.slurm.cli import CliSlurm; "
                               f"CliSlurm(env={{'PATH': '{tmp_path}:/usr/bin:/bin'}}, timeout=120).script("
                               "[['update', 'JobId=1', 'A=1'], ['update', 'JobId=2', 'A=2']])"],
                              env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])})
    pidfile = tmp_path / "pid"
    deadline = time.monotonic() + 30
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert time.monotonic() < deadline and engine.poll() is None
        time.sleep(0.05)
    child = int(pidfile.read_text())
    engine.send_signal(signal.SIGKILL)
    engine.wait(timeout=10)
    deadline = time.monotonic() + 10
    while True:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        with open(f"/proc/{child}/stat") as fh:  # a zombie (not yet reaped by init) is dead too
            if fh.read().split(")")[-1].split()[0] == "Z":
                break
        assert time.monotonic() < deadline, "scontrol outlived the engine"
        time.sleep(0.05)
