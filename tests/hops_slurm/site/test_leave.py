"""``hops-slurm site leave`` (hops_slurm/site/leave.py) on the in-memory stand-in for slurmctld (the live run
is in test_site_live.py): every held Hops job handed to Slurm, every job out of the engine's reservations,
the probes cancelled, the engine's reservations deleted and nobody else's, the offer closed and the
partition file removed, and the lines of the site's hook to take out named."""

from __future__ import annotations

from pathlib import Path

import pytest

from hops_slurm.bundled import bundled
from hops_slurm.config import SiteConfig, parse_config
from hops_slurm.directives import COMMENT_PREFIX
from hops_slurm.engine.aside import COMMENT_PREFIX as ASIDE_PREFIX
from hops_slurm.engine.lock import InstanceLock
from hops_slurm.engine.offer import HEADER as OFFER_HEADER
from hops_slurm.errors import HopsError
from hops_slurm.site.facts import read_hook
from hops_slurm.site.leave import leave
from hops_slurm.slurm.api import SlurmJob
from hops_slurm.slurm.enact import GATE, read_job_env
from hops_slurm.slurm.snapshot import OFFER
from tests.hops_slurm.engine.standin import StandInSlurm
from tests.tests_paths import DATA

GOOD = "gpus=2,4 samples=1000 batch-size=8 model=resnet18 lr=0.1@4"


def _site(tmp_path: Path) -> tuple[SiteConfig, Path]:
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "job_submit.lua").write_text((DATA / "site" / "job_submit.lua").read_text())
    (etc / "hops_submit.lua").write_text("return {}\n")
    (etc / "hops-partitions").write_text("hops-partitions 1\npartition hops\n")
    (etc / "hops-offer").write_text("hops-offer 2\nas_of 1\nexpires 9999999999\ntres gres:gpu:\nnode n1 4 hops\n")
    config = parse_config({"engine": {"offer_file": str(etc / "hops-offer"), "hook_dir": str(etc)},
                           "paths": {"state_dir": str(tmp_path / "state")}})
    return config, etc


def _cluster() -> StandInSlurm:
    api = StandInSlurm()
    api.submit("1", GOOD)  # held by the hook and the engine
    api.hold("1")
    api.submit("2", GOOD)  # set aside by the engine, its directives read back
    api.hold("2")
    api.update_job("2", {"Comment": ASIDE_PREFIX + "its estimate failed"})
    api.submit("3", GOOD)  # placed and running in its own reservation
    api.update_job("3", {"Reservation": "hops-j3"})
    api._jobs["3"] = api.get("3").model_copy(update={"state": "RUNNING", "priority": 1000, "gpu_alloc": {"n1": (0, 1)}})
    api._jobs["4"] = SlurmJob(job_id="4", name="hops-probe-1-a100", user="alice", state="PENDING", priority=1000,
                              partition="profiler", reservation="hops-p1")
    api._jobs["5"] = SlurmJob(job_id="5", name="plain", user="bob", state="PENDING", reason="JobHeldUser", priority=0,
                              partition="hops")  # the site's own job, held by its owner: not Hops's
    for name in (GATE, OFFER, "hops-j3", "hops-p1", "hops-maintenance"):
        api.create_reservation(name, ["n1", "n2"], ["root"], ["IGNORE_JOBS"])
    api.calls.clear()
    return api


def test_leaving_hands_everything_of_hops_back_to_slurm_and_touches_nothing_else(tmp_path: Path) -> None:
    config, etc = _site(tmp_path)
    api = _cluster()
    report = leave(config, api, read_hook(etc, None))
    assert report.released == {"1": 2, "2": 2} and report.stay_held == {}
    for job_id in ("1", "2"):
        job = api.get(job_id)
        assert job.priority > 0 and job.tres_per_job == "gres:gpu:2" and job.reservation == ""
        assert job.comment.startswith("hops: released as the site left Hops")
        assert read_job_env(tmp_path / "state" / "jobs", job_id)["HOPS_GPUS"] == "2"
    assert report.detached == ["3"] and api.get("3").reservation == "" and api.get("3").state == "RUNNING"
    assert report.cancelled == ["4"] and api.get("4").state == "CANCELLED"
    assert api.get("5").priority == 0 and api.get("5").comment == ""  # the site's own job: untouched
    assert not [c for c in api.calls if "5" in c[1:2]]
    assert sorted(report.deleted) == sorted([GATE, OFFER, "hops-j3", "hops-p1"]) and report.kept == ["hops-maintenance"]
    assert [r.name for r in api.reservations()] == ["hops-maintenance"]
    assert (etc / "hops-offer").read_text() == OFFER_HEADER + "\n"  # closed: the hook offers nothing
    assert not (etc / "hops-partitions").exists() and (etc / "hops_submit.lua").exists()
    lines = report.lines()
    assert f"leave: take these lines out of {etc / 'job_submit.lua'}, then `scontrol reconfigure`:" in lines
    named = [line for line in lines if line.startswith("leave:   line ")]
    hook = (etc / "job_submit.lua").read_text().splitlines()
    assert [int(line.split()[2].rstrip(":")) for line in named] == \
        [n for n, text in enumerate(hook, start=1) if "hops_submit.lua\")" in text or "hops.job_" in text]
    assert report.failed == {}


def test_what_cannot_be_done_is_named_and_a_second_run_finishes_it(tmp_path: Path) -> None:
    config, etc = _site(tmp_path)

    class Busy(StandInSlurm):
        refuse = True

        def delete_reservation(self, name: str) -> None:
            if self.refuse and name == GATE:
                from hops_slurm.slurm.api import SlurmCommandError
                raise SlurmCommandError(["scontrol", "delete", f"ReservationName={name}"], 1, "Requested reservation is in use")
            super().delete_reservation(name)

    api = Busy()
    api.submit("1", GOOD)
    api.hold("1")
    api.create_reservation(GATE, ["n1"], ["root"], ["IGNORE_JOBS"])
    report = leave(config, api, read_hook(etc, None))
    assert report.released == {"1": 2} and list(report.failed) == [f"delete reservation {GATE}"]
    assert any(line.startswith(f"leave: not done: delete reservation {GATE}: ") for line in report.lines())
    api.refuse = False
    again = leave(config, api, read_hook(etc, None))
    assert again.released == {} and again.deleted == [GATE] and again.failed == {}


def test_leaving_refuses_while_an_engine_runs_and_a_dry_run_changes_nothing(tmp_path: Path) -> None:
    config, etc = _site(tmp_path)
    api = _cluster()
    with InstanceLock(tmp_path / "state" / "engine.lock"), pytest.raises(HopsError, match="must be stopped"):
        leave(config, api, read_hook(etc, None))
    report = leave(config, api, read_hook(etc, None), dry_run=True)
    assert report.released == {"1": 2, "2": 2} and report.detached == ["3"] and len(report.deleted) == 4
    assert api.calls == [] and (etc / "hops-partitions").exists()
    assert (etc / "hops-offer").read_text().startswith("hops-offer 2")


def test_a_site_without_a_hook_of_its_own_is_told_to_take_the_plugin_out(tmp_path: Path) -> None:
    config, etc = _site(tmp_path)
    shipped = bundled("hooks", "job_submit.lua")
    (etc / "job_submit.lua").write_text(shipped.read_text())
    report = leave(config, StandInSlurm(), read_hook(etc, None))
    assert report.lines()[-1].endswith("is not the site's own: take JobSubmitPlugins=lua out of slurm.conf and restart "
                                       "slurmctld, or put the site's own hook there")
    assert COMMENT_PREFIX == "hops:"
