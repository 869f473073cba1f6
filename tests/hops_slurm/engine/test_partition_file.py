"""The partition file for the submit hook: its format, the atomic and careful write, and the engine
writing it at start (and again when it changed) with one line for each problem."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from hops_slurm.config import parse_config
from hops_slurm.engine import partition_file as pf
from hops_slurm.engine.engine import Engine
from hops_slurm.slurm.api import SlurmNode
from standin import StandInSlurm


def test_render_and_parse_agree_and_the_default_comes_first() -> None:
    text = pf.render(["gpu-hops", "old.cards"])
    assert text == "hops-partitions 1\npartition gpu-hops\npartition old.cards\n"
    assert pf.parse(text.encode()) == ("gpu-hops", "old.cards")


@pytest.mark.parametrize(("data", "problem"), [
    (b"", "empty"), (b"  \n", "empty"), (b"hops-partitions 2\npartition a\n", "first line"),
    (b"hops-partitions 1\n", "got 0"), (b"hops-partitions 1\npartition a b\n", "line 2"),
    (b"hops-partitions 1\npartition a;rm\n", "line 2"), ("hops-partitions 1\npartition \u00e9\n".encode(), "ASCII"),
    (b"hops-partitions 1\n" + b"partition a\n" * 400, "longer than 4096"),
])
def test_a_bad_file_gets_one_line_naming_the_problem(data: bytes, problem: str) -> None:
    with pytest.raises(pf.PartitionFileError, match=problem) as err:
        pf.parse(data)
    assert "\n" not in str(err.value)


def test_names_the_hook_could_not_read_are_never_written() -> None:
    for bad in (["a b"], ["x" * 65], [], ["p"] * 65):
        with pytest.raises(pf.PartitionFileError):
            pf.render(bad)


def test_publish_writes_once_readable_and_replaces_a_planted_link_not_its_target(tmp_path: Path) -> None:
    where = tmp_path / "hook"
    where.mkdir(mode=0o755)
    assert pf.publish(where, ["a"]) is True
    path = where / pf.FILE
    assert path.read_text() == pf.render(["a"]) and (path.stat().st_mode & 0o777) == 0o644
    assert pf.publish(where, ["a"]) is False  # says the same already: not written again
    victim = tmp_path / "victim"
    victim.write_text("mine\n")
    path.unlink()
    path.symlink_to(victim)
    (where / f".{pf.FILE}.{os.getpid()}.tmp").symlink_to(victim)  # a link where the temporary file goes
    assert pf.publish(where, ["a", "b"]) is True
    assert victim.read_text() == "mine\n" and not path.is_symlink() and pf.parse(path.read_bytes()) == ("a", "b")
    assert sorted(p.name for p in where.iterdir()) == [pf.FILE]


def test_publish_refuses_a_directory_others_could_write_or_that_is_not_one(tmp_path: Path) -> None:
    loose = tmp_path / "loose"
    loose.mkdir()
    loose.chmod(0o775)
    with pytest.raises(pf.PartitionFileError, match="writable by group or others"):
        pf.publish(loose, ["a"])
    link = tmp_path / "link"
    link.symlink_to(tmp_path)
    with pytest.raises(pf.PartitionFileError, match="not a directory"):
        pf.publish(link, ["a"])
    with pytest.raises(pf.PartitionFileError, match="No such file"):
        pf.publish(tmp_path / "none", ["a"])
    assert not (loose / pf.FILE).exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory to another user needs root")
def test_publish_refuses_a_directory_owned_by_another_user(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, 12345, 12345)
    with pytest.raises(pf.PartitionFileError, match="owned by uid 12345"):
        pf.publish(theirs, ["a"])


def _engine(tmp_path: Path, api: StandInSlurm, engine: dict[str, object]) -> Engine:
    config = parse_config({"slurm": {"partitions": ["hops", "old"]}, "engine": engine,
                           "paths": {"state_dir": str(tmp_path / "state")}})
    return Engine(config, api=api)


def test_the_engine_writes_the_file_beside_the_offer_and_again_when_removed(tmp_path: Path,
                                                                           caplog: pytest.LogCaptureFixture) -> None:
    where = tmp_path / "etc"
    where.mkdir(mode=0o755)
    api = StandInSlurm()
    api._nodes.append(SlurmNode(name="o1", state="idle", gpu_type="v100", gpus_total=4, partitions=("old",)))
    caplog.set_level(logging.INFO)
    engine = _engine(tmp_path, api, {"offer_file": str(where / "hops-offer")}).open()
    try:
        assert pf.parse((where / pf.FILE).read_bytes()) == ("hops", "old")
        (where / pf.FILE).unlink()
        engine.refresh()
        assert pf.parse((where / pf.FILE).read_bytes()) == ("hops", "old")
    finally:
        engine.close()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_missing_partition_and_a_bad_directory_are_one_line_each_and_the_engine_runs(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    loose = tmp_path / "loose"
    loose.mkdir()
    loose.chmod(0o777)
    api = StandInSlurm()  # its nodes are in "hops" only: Slurm has no partition "old"
    api.submit("1", "gpus=1 samples=1000 batch-size=8 model=resnet18")
    engine = _engine(tmp_path, api, {"hook_dir": str(loose)}).open()
    try:
        engine.refresh()
        engine.refresh()
        assert "1" in engine.tracked  # its jobs are planned as ever
    finally:
        engine.close()
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len([m for m in errors if "no partition old" in m]) == 1
    assert len([m for m in errors if "writable by group or others" in m]) == 1  # once while it lasts
    assert all("\n" not in m for m in errors) and not (loose / pf.FILE).exists()
