"""The adapter on output recorded from the real daemons of Slurm 22.05.8, 24.11.5 and 26.05.5.

tests/data/slurm-output/<release>/ holds what each release printed for the same scenario (capture.py
beside it): jobs 1-16 fill the a100 nodes one GPU each, some cancelled so that the free GPUs are scattered
(a100-1: 1,5; a100-2: 2,3,6); #HOPS job 17, whose name imitates ``scontrol -o`` fields, was placed there
as the enactor places jobs (TresPerJob, NodeList, its own reservation, release); 18 is held by the submit
hook, 21 admin-held, 19 pending with a comment that imitates fields, 20 holds v100-1's four GPUs, 9 was
requeue-held, v100-2 is drained. No cluster runs here: :class:`Replay` is the CLI backend with its
command runner answering from those files (a recording, not a live Slurm), so the release detection,
the choice of commands and the readers are the real ones.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from hops_slurm.slurm import read_text
from hops_slurm.slurm.api import SlurmCommandError, SlurmError, SlurmJob
from hops_slurm.slurm.cli import CliSlurm
from hops_slurm.slurm.dialect import DIALECTS, UnsupportedSlurm, data_parser_of, dialect_for
from hops_slurm.slurm.snapshot import cluster_view
from tests_paths import DATA

RECORDED = DATA / "slurm-output"
RELEASES = ("22.05", "24.11", "26.05")
DATA_PARSERS = {"22.05": "openapi/v0.0.38", "24.11": "data_parser/v0.0.42", "26.05": "data_parser/v0.0.45"}
HOSTILE_NAME = "x Reservation=fake JobState=PENDING Nodes=v100-1 GRES=gpu:v100:4(IDX:0-3) NodeList=v100-1"
HOSTILE_COMMENT = "Nodes=v100-2 CPU_IDs=0 Mem=1 GRES=gpu:v100:4(IDX:0-3) Reservation=fake2"

#: argv -> recorded file, per dialect family
FILES_22 = {
    ("scontrol", "--version"): "scontrol-version.txt",
    ("squeue", "--json"): "squeue.json",
    ("sinfo", "--json"): "sinfo.json",
    ("scontrol", "-o", "show", "reservation"): "scontrol-show-reservation.txt",
}
FILES_STRUCTURED = {
    ("scontrol", "--version"): "scontrol-version.txt",
    ("scontrol", "show", "job", "--json"): "scontrol-show-job.json",
    ("scontrol", "show", "job", "17", "--json"): "scontrol-show-job-17.json",
    ("scontrol", "show", "nodes", "--json"): "scontrol-show-nodes.json",
    ("scontrol", "show", "reservation", "--json"): "scontrol-show-reservation.json",
}


class Replay(CliSlurm):
    """The CLI backend answering from a release's recorded output; records every argv it was asked to run."""

    def __init__(self, release: str, override: dict[tuple[str, ...], str] | None = None) -> None:
        super().__init__(env={})
        self.dir = RECORDED / release
        self.files = FILES_22 if release == "22.05" else FILES_STRUCTURED
        self.override = override or {}
        self.ran: list[tuple[str, ...]] = []

    def _run(self, argv: list[str], stdin: str | None = None, env: Mapping[str, str] | None = None) -> str:
        key = tuple(argv)
        if key == tuple(read_text.ARGV):  # 22.05's text listing: none recorded here, its JSON answers
            raise SlurmCommandError(argv, 1, "not recorded")
        self.ran.append(key)
        if key in self.override:
            return self.override[key]
        if key == ("scontrol", "show", "job", "999", "--json"):
            return _recorded_999(self.dir)
        if key not in self.files:
            raise AssertionError(f"the adapter ran {argv}, which has no recording for this release")
        return (self.dir / self.files[key]).read_text()


def _recorded_999(d: Path) -> str:
    """The stdout part of scontrol-show-job-999.txt (exit status, stdout, stderr of an unknown job)."""
    text = (d / "scontrol-show-job-999.txt").read_text()
    assert text.startswith("exit 0\n")
    return text.split("--- stdout\n", 1)[1].split("--- stderr\n", 1)[0]


def _comparable(job: SlurmJob) -> dict[str, object]:
    """What must agree between releases: everything but the clock times, the priority value (its size
    depends on the release's priority plugin defaults; only 0 = held matters, checked separately) and the
    time limit (the running job 17 of the scenario: 22.05 prints the partition's year, 24.11+ infinite)."""
    return job.model_dump(exclude={"submit_time", "start_time", "end_time", "priority", "time_limit", "eligible_time"}) | {"held": job.held}


@pytest.fixture(params=RELEASES)
def release(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_release_and_data_parser_are_read_from_slurm_itself(release: str) -> None:
    api = Replay(release)
    assert api.dialect is DIALECTS[release]
    assert api.dialect.structured == (release != "22.05") and api.dialect.data_parser == DATA_PARSERS[release]
    main = "squeue.json" if release == "22.05" else "scontrol-show-job.json"
    assert data_parser_of(json.loads((api.dir / main).read_text())) == DATA_PARSERS[release]


def test_every_release_reads_to_the_same_views(release: str) -> None:
    base, other = Replay("22.05"), Replay(release)
    assert [_comparable(j) for j in other.jobs()] == [_comparable(j) for j in base.jobs()]
    assert other.nodes() == base.nodes()
    assert other.reservations() == base.reservations()
    for fragment in (False, True):
        assert cluster_view(other.nodes(), other.jobs(), fragment=fragment) == cluster_view(base.nodes(), base.jobs(), fragment=fragment)


def test_jobs_carry_every_field_the_engine_uses(release: str) -> None:
    jobs = {j.job_id: j for j in Replay(release).jobs()}
    assert sorted(jobs, key=int) == [str(i) for i in range(1, 22)]  # ended jobs too (the engine dates their end)

    hops = jobs["17"]  # running across two nodes on scattered GPUs, in its reservation
    assert hops.name == HOSTILE_NAME and hops.user == "root" and hops.partition == "hops"
    assert hops.state == "RUNNING" and hops.active and not hops.pending and not hops.held and hops.priority > 0
    assert hops.is_hops and hops.directives is not None and hops.directives.startswith("gpus=1,2,4,8 samples=1000000 ")
    assert hops.nodes == ("a100-1", "a100-2") and hops.node_count == 2
    assert hops.required_nodes == ("a100-1", "a100-2")
    assert hops.gpu_alloc == {"a100-1": (1, 5), "a100-2": (2, 3, 6)}
    assert hops.gpu_config() == {"a100-1": 2, "a100-2": 3}
    assert hops.reservation == "hops-job-17"
    assert (hops.tres_per_job, hops.tres_per_node) == ("gres:gpu:a100:5", "")
    assert 0 < hops.submit_time <= hops.start_time

    user_held, admin_held = jobs["18"], jobs["21"]
    for held in (user_held, admin_held):
        assert held.is_hops and held.pending and held.held and held.priority == 0 and held.gpu_alloc == {}
        assert held.nodes == () and held.reservation == "" and held.submit_time > 0
    assert (user_held.reason, admin_held.reason) == ("JobHeldUser", "JobHeldAdmin")

    pending = jobs["19"]
    assert pending.state == "PENDING" and not pending.held and not pending.is_hops
    assert pending.reason == "ReqNodeNotAvail" and pending.comment == HOSTILE_COMMENT
    assert pending.tres_per_node == "gres:gpu:a100:8" and pending.gpu_alloc == {}

    requeued = jobs["9"]  # requeuehold: pending, held, counted restart, keeps the node it asked for
    assert requeued.pending and requeued.held and requeued.reason == "JobHeldUser" and requeued.restart_count == 1
    assert requeued.required_nodes == ("a100-2",) and requeued.gpu_alloc == {}

    assert jobs["20"].gpu_alloc == {"v100-1": (0, 1, 2, 3)} and jobs["20"].tres_per_node == "gres:gpu:v100:4"
    for i in ("2", "6", "11", "12", "15"):
        ended = jobs[i]
        assert ended.state == "CANCELLED" and not (ended.pending or ended.active) and ended.gpu_alloc == {}
        assert 0 < ended.start_time <= ended.end_time
    running = [j for j in jobs.values() if j.active]
    assert sorted(int(j.job_id) for j in running) == [1, 3, 4, 5, 7, 8, 10, 13, 14, 16, 17, 20]
    assert all(len(j.gpu_alloc) == len(j.nodes) and all(j.gpu_alloc.values()) for j in running)


def test_nodes_and_reservations_carry_every_field_the_engine_uses(release: str) -> None:
    api = Replay(release)
    nodes = {n.name: n for n in api.nodes()}
    assert list(nodes) == ["a100-1", "a100-2", "v100-1", "v100-2"]
    a1, a2, v1, v2 = nodes.values()
    assert (a1.gpu_type, a1.gpus_total, a1.gpus_used, a1.gpus_free) == ("a100", 8, tuple(range(8)), 0)
    assert (a2.gpus_used, a2.gpus_free) == ((1, 2, 3, 4, 5, 6, 7), 1)  # GPU 0 freed by the requeue-hold
    assert (a1.state, a1.flags, a1.usable) == ("mixed", ("RESERVED",), True)
    assert (v1.gpu_type, v1.gpus_total, v1.gpus_free) == ("v100", 4, 0)
    assert (v2.state, v2.flags, v2.usable, v2.gpus_free) == ("idle", ("DRAIN",), False, 4)
    assert all(n.partitions == ("hops", "profiler") and n.features == (n.gpu_type,) for n in nodes.values())
    assert (a1.cpus, a1.alloc_cpus, v2.cpus, v2.alloc_cpus) == (16, 7, 8, 0)

    [resv] = api.reservations()
    assert (resv.name, resv.nodes, resv.users) == ("hops-job-17", ("a100-1", "a100-2"), ("root",))
    assert resv.flags == ("IGNORE_JOBS", "OVERLAP", "SPEC_NODES")

    view = cluster_view(api.nodes(), api.jobs(), fragment=False)  # job 17's GPUs count free for a round plan
    assert {n.name: n.free_gpus for n in view.nodes} == {"a100-1": 2, "a100-2": 4, "v100-1": 0}
    fragment = cluster_view(api.nodes(), api.jobs(), fragment=True)
    assert {n.name: n.free_gpus for n in fragment.nodes} == {"a100-1": 0, "a100-2": 1, "v100-1": 0}


def test_one_job_is_read_with_the_structured_command_where_there_is_one(release: str) -> None:
    api = Replay(release)
    listed = {j.job_id: j for j in api.jobs()}
    assert api.job("17") == listed["17"]
    assert api.job("999") is None
    expected = ("squeue", "--json") if release == "22.05" else ("scontrol", "show", "job", "17", "--json")
    assert expected in api.ran


def test_a_hostile_job_name_or_comment_cannot_imitate_fields_on_22_05() -> None:
    # The hazard is in the recording: 22.05's one-line text carries the name's fake fields first.
    text = (RECORDED / "22.05" / "scontrol-show-job.txt").read_text()
    line = next(x for x in text.splitlines() if x.startswith("JobId=17 "))
    assert line.index("Reservation=fake") < line.index("Reservation=hops-job-17")
    assert "Nodes=v100-1 GRES=gpu:v100:4(IDX:0-3)" in line
    api = Replay("22.05")
    job = api.job("17")
    assert job is not None and job.reservation == "hops-job-17" and job.gpu_alloc == {"a100-1": (1, 5), "a100-2": (2, 3, 6)}
    api.jobs()
    api.reservations()
    assert not [argv for argv in api.ran if argv[:2] == ("scontrol", "-o") and "job" in argv], api.ran


@pytest.mark.parametrize("release", ["24.11", "26.05"])
def test_squeue_of_newer_releases_agrees_but_leaves_out_ended_jobs(release: str) -> None:
    d = DIALECTS[release]
    from_squeue = {j.job_id: j for j in d.jobs((RECORDED / release / "squeue.json").read_text())}
    from_scontrol = {j.job_id: j for j in d.jobs((RECORDED / release / "scontrol-show-job.json").read_text())}
    assert set(from_squeue) == {i for i, j in from_scontrol.items() if j.pending or j.active}
    assert all(from_squeue[i] == from_scontrol[i] for i in from_squeue)


def _with_data_parser(path: Path, parser: str) -> str:
    data = json.loads(path.read_text())
    data["meta"]["plugin"]["data_parser"] = parser
    return json.dumps(data)


def test_an_unknown_data_parser_is_refused_naming_it() -> None:
    jobs = _with_data_parser(RECORDED / "26.05" / "scontrol-show-job.json", "data_parser/v0.0.46")
    api = Replay("26.05", {("scontrol", "show", "job", "--json"): jobs})
    with pytest.raises(UnsupportedSlurm, match=r"Slurm 26\.05 answered in data_parser/v0\.0\.46, which hops-slurm does not "
                                               r"read \(it reads Slurm 26\.05 in data_parser/v0\.0\.45\)"):
        api.jobs()
    # a data_parser read for another release is refused as well: only what was recorded is read
    with pytest.raises(UnsupportedSlurm, match="Slurm 26.05 answered in data_parser/v0.0.42"):
        DIALECTS["26.05"].jobs((RECORDED / "24.11" / "scontrol-show-job.json").read_text())
    with pytest.raises(UnsupportedSlurm, match="answered in data_parser/v0.0.42"):
        DIALECTS["22.05"].jobs((RECORDED / "24.11" / "scontrol-show-job.json").read_text())
    with pytest.raises(UnsupportedSlurm, match="answered in openapi/v0.0.38"):
        DIALECTS["24.11"].nodes((RECORDED / "22.05" / "sinfo.json").read_text())
    nameless = json.loads((RECORDED / "24.11" / "scontrol-show-nodes.json").read_text())
    del nameless["meta"]
    with pytest.raises(UnsupportedSlurm, match="names no data_parser"):
        DIALECTS["24.11"].nodes(json.dumps(nameless))


def test_an_unknown_release_is_refused_naming_it() -> None:
    for version in ("slurm 25.05.3", "slurm-wlm 23.02.7", "slurm 21.08.8"):
        with pytest.raises(UnsupportedSlurm, match=rf"Slurm {version.split()[1]} .* not a release hops-slurm reads"):
            dialect_for(version)
    api = Replay("24.11", {("scontrol", "--version"): "slurm 25.11.1\n"})
    with pytest.raises(UnsupportedSlurm, match=r"25\.11\.1"):
        api.jobs()
    with pytest.raises(SlurmError, match="cannot read the Slurm version"):
        dialect_for("Slurm is not here")
    assert dialect_for("slurm 24.11.0\n") is DIALECTS["24.11"] and dialect_for("slurm-wlm 26.05.5") is DIALECTS["26.05"]


def test_output_that_does_not_fit_is_an_error_naming_the_command() -> None:
    groups = (RECORDED / "24.11" / "sinfo.json").read_text()  # groups of nodes, not per-node records
    with pytest.raises(SlurmCommandError, match=r"scontrol show nodes --json.*no 'nodes' list"):
        Replay("24.11", {("scontrol", "show", "nodes", "--json"): groups}).nodes()
    with pytest.raises(SlurmCommandError, match="not JSON"):
        Replay("26.05", {("scontrol", "show", "job", "--json"): "Slurm says hello"}).jobs()
    errors = json.loads((RECORDED / "26.05" / "scontrol-show-job-999.txt").read_text().split("--- stdout\n")[1].split("--- stderr")[0])
    errors["errors"] = [{"description": "Invalid job id specified", "error_number": 2017}]
    assert Replay("26.05", {("scontrol", "show", "job", "5", "--json"): json.dumps(errors)}).job("5") is None
    broken = json.loads((RECORDED / "24.11" / "scontrol-show-job.json").read_text())
    broken["jobs"][0]["job_state"] = ["WAITING"]
    with pytest.raises(SlurmCommandError, match=r"unexpected data_parser/v0\.0\.42 output from Slurm 24\.11.*WAITING"):
        Replay("24.11", {("scontrol", "show", "job", "--json"): json.dumps(broken)}).jobs()


def test_the_clients_are_whatever_path_finds(tmp_path: Path) -> None:
    """The adapter runs ``scontrol`` from the ``PATH`` of its environment, so wrapper scripts (e.g. ones
    that run the clients inside a Debian root) serve as the clients."""
    d = RECORDED / "26.05"
    script = tmp_path / "scontrol"
    script.write_text(
        "#!/bin/sh\n"
        f'case "$*" in\n'
        f'  "--version") cat "{d / "scontrol-version.txt"}" ;;\n'
        f'  "show nodes --json") cat "{d / "scontrol-show-nodes.json"}" ;;\n'
        f'  "show reservation --json") cat "{d / "scontrol-show-reservation.json"}" ;;\n'
        '  *) echo "unexpected: $*" >&2; exit 3 ;;\n'
        "esac\n"
    )
    script.chmod(0o755)
    api = CliSlurm(env={"PATH": f"{tmp_path}:/usr/bin:/bin", "SLURM_CONF": "/nonexistent"})
    assert api.dialect is DIALECTS["26.05"]
    assert [n.name for n in api.nodes()] == ["a100-1", "a100-2", "v100-1", "v100-2"]
    assert [r.name for r in api.reservations()] == ["hops-job-17"]
    with pytest.raises(SlurmCommandError, match=r"exit 3\): unexpected: show job --json"):
        api.jobs()


def test_a_job_name_that_is_not_utf8_does_not_make_the_listing_unreadable(tmp_path: Path) -> None:
    """Slurm passes a job's name through ``--json`` as raw bytes: a job named with invalid UTF-8 must not
    stop the engine reading every other job (it reads with U+FFFD in its name)."""
    d = RECORDED / "24.11"
    raw = (d / "scontrol-show-job.json").read_bytes()
    hostile = HOSTILE_NAME.encode()
    assert hostile in raw
    jobs_file = tmp_path / "jobs.json"
    jobs_file.write_bytes(raw.replace(hostile, b"bad\xff\xfename", 1))
    script = tmp_path / "scontrol"
    script.write_text(
        "#!/bin/sh\n"
        'case "$*" in\n'
        f'  "--version") cat "{d / "scontrol-version.txt"}" ;;\n'
        f'  "show job --json") cat "{jobs_file}" ;;\n'
        '  *) echo "unexpected: $*" >&2; exit 3 ;;\n'
        "esac\n"
    )
    script.chmod(0o755)
    jobs = CliSlurm(env={"PATH": f"{tmp_path}:/usr/bin:/bin", "SLURM_CONF": "/nonexistent"}).jobs()
    by_id = {j.job_id: j for j in jobs}
    assert by_id["17"].name == "bad\ufffd\ufffdname"
    assert len(jobs) == len(Replay("24.11").jobs())


@pytest.mark.parametrize("number", ["1e400", "-1e400", "NaN", "Infinity", "1" + "0" * 400, "-" + "9" * 5000])
@pytest.mark.parametrize("field", ["priority", "submit_time", "start_time", "time_limit", "restart_cnt", "eligible_time"])
def test_one_job_with_an_odd_number_does_not_make_the_listing_unreadable(release: str, field: str, number: str) -> None:
    """A number no Slurm prints (infinite, not a number, more digits than any 64-bit value, more than
    Python converts) in one job reads as unset (Slurm's own word for "no value"); the other jobs read as
    before. Before: OverflowError or ValueError out of the reader, and no job at all for the refresh."""
    key = ("squeue", "--json") if release == "22.05" else ("scontrol", "show", "job", "--json")
    data = json.loads((RECORDED / release / (FILES_22 if release == "22.05" else FILES_STRUCTURED)[key]).read_text())
    job = data["jobs"][0]
    job[field] = {"set": True, "infinite": False, "number": "@@"} if isinstance(job.get(field), dict) else "@@"
    jobs = Replay(release, {key: json.dumps(data).replace('"@@"', number)}).jobs()
    plain = Replay(release).jobs()
    assert [j.job_id for j in jobs] == [j.job_id for j in plain]
    assert jobs[1:] == plain[1:]
    odd = jobs[0].model_dump()
    assert all(isinstance(v, (int, float)) and abs(v) < 2 ** 65 for v in odd.values() if isinstance(v, (int, float)))


def test_a_raw_control_character_in_a_job_name_does_not_make_the_listing_unreadable() -> None:
    """Slurm escapes control characters in its JSON (json-c); should one come through raw (a NUL-free byte
    below 0x20 in a name or comment), the listing still reads, the name carrying it."""
    key = ("scontrol", "show", "job", "--json")
    text = (RECORDED / "24.11" / "scontrol-show-job.json").read_text()
    hostile = json.dumps(HOSTILE_NAME)[1:-1]
    assert hostile in text
    jobs = Replay("24.11", {key: text.replace(hostile, "bad\x01\tname\u2028", 1)}).jobs()
    assert "bad\x01\tname\u2028" in [j.name for j in jobs]
