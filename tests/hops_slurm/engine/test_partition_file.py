"""The partition file for the submit hook: its format, the atomic and careful write, and the engine
writing it at start (and again when it changed) with one line for each problem."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
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
    (b"", "empty"), (b"\n\n", "empty"), (b"  \n", "first line"), (b"hops-partitions 2\npartition a\n", "first line"),
    (b"hops-partitions 1\n", "got 0"), (b"hops-partitions 1\npartition a b\n", "line 2"), (b"hops-partitions 1\npartition a\npartition a\n", "twice"),
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
    (where / f".{pf.FILE}.tmp").symlink_to(victim)  # a link where the temporary file goes (hops_slurm.rootfile)
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


HOOK_DIR = Path(__file__).resolve().parents[3] / "hooks"
# arg: the hook's directory, then the case files; one verdict per case (the module's read_partitions)
PARTS_RUNNER = r"""
slurm = { SUCCESS = 0, ERROR = -1, log_user = function(...) end, log_info = function(...) end }
local M = dofile(arg[1] .. "/hops_submit.lua")
for i = 2, #arg do
	local parts = M.read_partitions(arg[i])
	print(parts and table.concat(parts, ",") or "none")
end
"""


def partition_odd_inputs() -> list[bytes]:
    good = b"hops-partitions 1\npartition a\npartition b.c\n"
    return [
        good, b"", b"\n", b"  \n", good.replace(b"\n", b"\r\n"), good.replace(b"1\n", b"1 \n", 1),
        good.replace(b"\n", b"\n\n"), b"\n\n" + good, good + b"partition a\n", good + b"partition  c\n",
        good + b"partition\tc\n", good + b"partition c \n", good + b" partition c\n", good + b"partition c\x00\n",
        good + b"partition c\x0bd\n", good + b"partition \xc3\xa9\n", good + b"partition " + b"p" * 64 + b"\n",
        good + b"partition " + b"p" * 65 + b"\n", good + b"partition c d\n", good + b"#comment\n",
        b"hops-partitions 1\n" + b"".join(b"partition p%d\n" % i for i in range(64)),
        b"hops-partitions 1\n" + b"".join(b"partition p%d\n" % i for i in range(65)),
        good.rstrip(b"\n"), good + b"x" * (4097 - len(good)), b"hops-partitions 1\n", b"hops-partitions 01\npartition a\n",
        b"HOPS-PARTITIONS 1\npartition a\n", b"hops-partitions 1\nPartition a\n", b"hops-partitions 1\npartition -\n",
    ]


def test_the_python_reading_is_the_hooks_reading_on_odd_inputs(tmp_path: Path) -> None:
    """:func:`partition_file.parse` says of every odd file what the hook's reader does (the same
    partitions, or none): a test that asserts a file through it asserts what production reads. Before,
    the Python reading took CRLF, tabs, doubled spaces, trailing blanks and duplicate lines that the hook
    refuses, and refused blank lines that the hook skips."""
    lua = shutil.which("lua5.1")
    assert lua, "lua5.1 is needed (apt-get install lua5.1)"
    cases = partition_odd_inputs()
    paths = []
    for i, data in enumerate(cases):
        paths.append(tmp_path / f"case{i}")
        paths[-1].write_bytes(data)
    runner = tmp_path / "runner.lua"
    runner.write_text(PARTS_RUNNER)
    out = subprocess.run([lua, str(runner), str(HOOK_DIR), *map(str, paths)], capture_output=True, text=True, check=True)
    hook = out.stdout.splitlines()
    assert len(hook) == len(cases)

    def py(data: bytes) -> str:
        try:
            return ",".join(pf.parse(data))
        except pf.PartitionFileError as exc:
            assert "\n" not in str(exc)
            return "none"

    assert [(i, h, p) for i, (h, p) in enumerate(zip(hook, map(py, cases), strict=True)) if h != p] == []
    assert 5 < hook.count("none") < len(cases) - 3  # the corpus has both verdicts
