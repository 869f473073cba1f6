"""hops_slurm/sbatch_header.py reads a script's #SBATCH options as sbatch does (src/sbatch/opt.c): where
the header ends, how a line splits into words, how getopt_long reads them, and what reaches the hook."""

from __future__ import annotations

import pytest

from hops_slurm.sbatch_header import SbatchError, option_words, read_header, request_fields


@pytest.mark.parametrize(("script", "words"), [
    (b"#!/bin/sh\n#SBATCH -p gpu\n#SBATCH --gres=gpu:2\ntrue\n", ["-p", "gpu", "--gres=gpu:2"]),
    (b"#!/bin/sh\n\n   \n  # note\n#SBATCH -N 1\ntrue\n#SBATCH -p late\n", ["-N", "1"]),  # ends at the first command
    (b"#!/bin/sh\n #SBATCH -p indented\n#SBATCH -J x\n", ["-J", "x"]),  # not in column 0: a comment
    (b"#!/bin/sh\n#HOPS gpus=1\n#SBATCH -p after\n", ["-p", "after"]),  # after #HOPS lines: still header
    (b"#!/bin/sh\n\r\n#SBATCH -p cr\n", ["-p", "cr"]),  # \r is isspace for sbatch
    (b"#SBATCH -J 'a b' -o \"c d\" x\\#y  # comment -p no\n", ["-J", "a b", "-o", "c d", "x#y"]),
    (b"#SBATCH --comment=\"hops:gpus=2 samples=1K\"\n", ["--comment=hops:gpus=2 samples=1K"]),
    (b"#SBATCH --comment='a#b'\n", ["--comment=a#b"]),  # a quoted # is not a comment
])
def test_option_words(script: bytes, words: list[str]) -> None:
    assert option_words(script) == words


@pytest.mark.parametrize(("line", "partition"), [
    ("-p gpu", "gpu"), ("-pgpu", "gpu"), ("--partition=gpu", "gpu"), ("--partition gpu", "gpu"),
    ("--part=gpu", "gpu"), ("-Hp gpu", "gpu"), ("-p a -p b", "b"), ("-p hops,gpu", "hops,gpu"),
])
def test_getopt_spellings(line: str, partition: str) -> None:
    assert read_header(f"#SBATCH {line}\n".encode()).get("partition") == partition


@pytest.mark.parametrize("line", ["--frobnicate=1", "--p=gpu", "-p", "--hold=yes", "stray", "-Z"])
def test_what_sbatch_refuses_is_an_error(line: str) -> None:
    with pytest.raises(SbatchError):
        read_header(f"#SBATCH {line}\n".encode())


def test_fields_as_the_hook_sees_them() -> None:
    h = read_header(b"#SBATCH --gres=gpu:2,nvme:1 --gpus-per-node=2 -G a100:4 --gpus-per-task=1 -N 2-4\n"
                    b"#SBATCH --reservation=,hops-offer --exclusive=user --comment=hops:x\n")
    assert request_fields(h) == {
        "tres_per_node": "gres/gpu:2,gres/nvme:1,gres/gpu:2", "tres_per_job": "gres/gpu:a100:4",
        "tres_per_task": "gres/gpu:1", "min_nodes": 2, "reservation": ",hops-offer", "comment": b"hops:x",
    }
    assert h.get("exclusive") == "user"


def test_bounded() -> None:
    with pytest.raises(SbatchError):
        option_words(b"#SBATCH " + b"-H " * 20000 + b"\n")
