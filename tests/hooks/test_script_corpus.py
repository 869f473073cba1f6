"""One verdict per script: the submit hook (hooks/hops_submit.lua, in lua5.1) and ``hops-slurm directives
check`` (hops_slurm/submit_policy.py behind hops_slurm/sbatch_header.py) answer the same on every script of
a corpus of realistic GPU batch scripts (tests/data/gpu-scripts): PyTorch DDP, torchrun, arrays, every
--gres/--gpus spelling, -p gpu, -p hops, mixed partitions, #SBATCH after #HOPS, hops-* reservations.

The hook inside slurmctld gets ``job_desc`` from sbatch; here it gets the fields the checker reads from the
script's #SBATCH header (the live check, tests/hooks/test_hook_module_live.py, has the real sbatch fill
them in). Each script's expected verdict is in expected.txt, so agreeing on a wrong answer fails too."""

from __future__ import annotations

from pathlib import Path

import pytest

from hops_slurm.cli import main
from hops_slurm.cli.directives_cmd import check
from hops_slurm.hooklua import run_verdicts, verdict_line
from hops_slurm.sbatch_header import read_header, request_fields

CORPUS = Path(__file__).resolve().parents[1] / "data" / "gpu-scripts"
PARTITIONS = ("hops", "hops-a100")


def expected() -> dict[str, tuple[str, str]]:
    out = {}
    for line in (CORPUS / "expected.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, kind, *key = line.split()
            out[name] = (kind, key[0] if key else "")
    return out


def partitions_file(tmp_path: Path) -> Path:
    path = tmp_path / "hops-partitions"
    path.write_text("hops-partitions 1\n" + "".join(f"partition {p}\n" for p in PARTITIONS))
    return path


def test_the_corpus_is_large_and_fully_described() -> None:
    scripts = {p.stem for p in CORPUS.glob("*.sh")}
    assert len(scripts) >= 30
    assert scripts == set(expected())


def test_hook_and_checker_give_the_same_verdict_on_every_script(tmp_path: Path) -> None:
    scripts = sorted(CORPUS.glob("*.sh"))
    requests = [{"script": s.read_bytes(), **request_fields(read_header(s.read_bytes()))} for s in scripts]
    lua = run_verdicts(requests, partitions_file(tmp_path))
    python = [verdict_line(check(s.read_bytes(), PARTITIONS)) for s in scripts]
    assert {s.stem: line for s, line in zip(scripts, lua)} == {s.stem: line for s, line in zip(scripts, python)}


def test_every_script_gets_its_expected_verdict() -> None:
    for s in sorted(CORPUS.glob("*.sh")):
        v = check(s.read_bytes(), PARTITIONS)
        kind, key = expected()[s.stem]
        assert (v.kind, v.key if v.kind == "ERR" else "") == (kind, key), (s.stem, v)


def test_an_accepted_gpu_request_is_dropped_and_said_so() -> None:
    v = check((CORPUS / "gres_and_other.sh").read_bytes(), PARTITIONS)
    assert v.changes == {"tres_per_node": "gres/nvme:1"}
    assert "request for 2 GPUs (--gres/--gpus) is dropped" in v.note
    v = check((CORPUS / "ddp_gres8.sh").read_bytes(), PARTITIONS)
    assert v.message == ("#HOPS gpus: --gres/--gpus asks for 8 GPUs, not one of gpus=1,2,4: remove --gres/--gpus "
                         "(the Hops engine picks the count from gpus=)")


def test_directives_check_exit_status_follows_the_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    parts = ["--partitions", ",".join(PARTITIONS)]
    assert main(["directives", "check", *parts, str(CORPUS / "ddp_gres4.sh"), str(CORPUS / "part_gpu.sh")]) == 0
    out = capsys.readouterr()
    assert "not a Hops job" in out.out and "is dropped" in out.err
    assert main(["directives", "check", *parts, str(CORPUS / "part_mixed.sh")]) == 1
    assert "mixes Hops partitions (hops) with others" in capsys.readouterr().err
    # the same script, other Hops partitions: outside Hops
    assert main(["directives", "check", "--partitions", "gpu-hops", str(CORPUS / "part_hops.sh")]) == 0
    assert "not a Hops job" in capsys.readouterr().out
