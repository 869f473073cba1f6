"""The submit hook inside a real slurmctld: every shared vector through ``sbatch``.

Valid scripts are accepted, held (the owner's hold: priority 0), put in the hops partition, with the
canonical directives in admin_comment; invalid ones are refused by sbatch with the message naming the
key; scripts without directives run untouched.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hops_slurm.hooklua import run_python
from hops_slurm.tools.minicluster.cluster import Minicluster
from hops_slurm.slurm.api import SlurmJob
from hops_slurm.slurm.cli import CliSlurm

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hook_corpus import corpus  # noqa: E402

pytestmark = pytest.mark.slurm

VECTORS = Path(__file__).resolve().parents[1] / "data" / "directives"


def _sbatch(cluster: Minicluster, script: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return cluster.run(["sbatch", "--parsable", "-o", "/dev/null", *extra, str(script)], check=False)


def _jobs(cluster: Minicluster) -> dict[str, SlurmJob]:
    """The jobs as the adapter reads them (the same view on every Slurm release)."""
    return {j.job_id: j for j in CliSlurm(cluster.env()).jobs()}


def test_every_vector_through_sbatch(minicluster: Minicluster) -> None:
    accepted: dict[str, str] = {}
    for script in sorted((VECTORS / "valid").glob("*.sh")):
        result = _sbatch(minicluster, script)
        assert result.returncode == 0, f"{script.name}: {result.stderr}"
        accepted[result.stdout.strip().split(";")[0]] = script.with_suffix(".canonical").read_text().strip()
    for script in sorted((VECTORS / "invalid").glob("*.sh")):
        expect = dict(line.split("=", 1) for line in script.with_suffix(".expect").read_text().splitlines() if line)
        result = _sbatch(minicluster, script)
        assert result.returncode != 0, f"{script.name} was accepted"
        assert f"#HOPS {expect['key']}:" in result.stderr and expect["contains"] in result.stderr, result.stderr
    jobs = _jobs(minicluster)
    try:
        for job_id, canonical in accepted.items():
            job = jobs[job_id]
            assert job.admin_comment == f"hops:{canonical}"
            assert job.state == "PENDING" and job.reason == "JobHeldUser" and job.priority == 0
            assert job.partition == "hops"
    finally:
        minicluster.run(["scancel", *accepted], check=False)


def test_comment_form_and_plain_jobs(minicluster: Minicluster, tmp_path: Path) -> None:
    plain = tmp_path / "plain.sh"
    plain.write_text("#!/bin/bash\nsleep 1\n")
    good = _sbatch(minicluster, plain, "--comment=hops:gpus=2 samples=1M batch-size=8 model=resnet18", "-H")
    bad = _sbatch(minicluster, plain, "--comment=hops:gpus=2 samples=1M model=resnet18")
    untouched = _sbatch(minicluster, plain, "-H")
    assert bad.returncode != 0 and "#HOPS batch-size: required key is missing" in bad.stderr
    ids = [r.stdout.strip() for r in (good, untouched)]
    try:
        jobs = _jobs(minicluster)
        assert jobs[ids[0]].admin_comment == "hops:gpus=2 samples=1000000 batch-size=8 model=resnet18"
        assert not jobs[ids[1]].admin_comment
    finally:
        minicluster.run(["scancel", *ids], check=False)


def test_hops_job_in_another_partition_is_left_alone(minicluster: Minicluster) -> None:
    result = _sbatch(minicluster, VECTORS / "valid" / "basic_list.sh", "-p", "profiler", "-H")
    assert result.returncode == 0, result.stderr
    job_id = result.stdout.strip().split(";")[0]
    try:
        job = _jobs(minicluster)[job_id]
        assert job.partition == "profiler" and not job.admin_comment  # not a Hops job: not validated, not held
    finally:
        minicluster.run(["scancel", job_id], check=False)


def test_hops_job_gpu_request_dropped_or_refused(minicluster: Minicluster) -> None:
    for extra, why in (("--gres=gpu:a100:2", "it names GPU type a100"), ("--gpus=3", "asks for 3 GPUs")):
        result = _sbatch(minicluster, VECTORS / "valid" / "basic_list.sh", extra)
        assert result.returncode != 0 and why in result.stderr and "remove --gres/--gpus" in result.stderr, (extra, result.stderr)
    dropped = _sbatch(minicluster, VECTORS / "valid" / "basic_list.sh", "--gpus=2")  # 2 is one of gpus=1,2,4,8
    plain = _sbatch(minicluster, VECTORS.parent / "plain-gpu.sh", "--gres=gpu:a100:1", "-H")
    assert dropped.returncode == 0, dropped.stderr
    assert plain.returncode == 0, plain.stderr  # a job without #HOPS lines may ask for GPUs as usual
    ids = [dropped.stdout.strip().split(";")[0], plain.stdout.strip().split(";")[0]]
    try:
        jobs = _jobs(minicluster)
        assert "gpu" not in jobs[ids[0]].tres_per_job and jobs[ids[0]].admin_comment.startswith("hops:gpus=1,2,4,8 ")
        assert "gpu" in jobs[ids[1]].tres_per_node
    finally:
        minicluster.run(["scancel", *ids], check=False)


def test_generated_corpus_through_sbatch_matches_python(minicluster: Minicluster, tmp_path: Path) -> None:
    """The differential corpus, inside slurmctld: what sbatch answers equals the Python parser's verdict."""
    def utf8(b: bytes | None) -> bool:
        try:
            (b or b"").decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True

    # A job that Slurm keeps must have UTF-8 text: squeue --json passes a comment's or name's bytes through
    # as they are, and the engine's reader (hops_slurm/slurm/cli.py) decodes strictly, so one such job
    # would break every later test that reads the queue. Refused inputs may hold any byte.
    cases = [(s, c) for s, c in corpus(4242, 600)
             if s.startswith(b"#!") and b"\x00" not in s and (c is None or b"\x00" not in c)
             and ((utf8(s) and utf8(c)) or run_python(s, c).kind == "ERR")][:120]
    accepted: dict[str, str] = {}
    checked = refused_by_hook = not_hook = 0
    wrong = []
    env = minicluster.env()
    for i, (script, comment) in enumerate(cases):
        path = tmp_path / f"c{i}.sh"
        path.write_bytes(script)
        argv: list[str | bytes] = ["sbatch", "--parsable", "-H", "-o", "/dev/null", "-D", str(tmp_path)]
        if comment is not None:
            argv.append(b"--comment=" + comment)
        result = subprocess.run([*argv, str(path)], env=env, capture_output=True, timeout=60)
        err = result.stderr.decode("utf-8", "replace")
        py = run_python(script, comment)
        if result.returncode == 0:
            job_id = result.stdout.decode().strip().split(";")[0]
            accepted[job_id] = py.text if py.kind == "OK" else ""
            if py.kind not in ("OK", "NONE"):
                wrong.append((i, "accepted by slurmctld", py))
            checked += 1
        elif "#HOPS" in err:
            refused_by_hook += 1
            checked += 1
            if py.kind != "ERR" or py.text not in err:
                wrong.append((i, err.strip()[-300:], py))
        else:
            not_hook += 1  # refused by sbatch itself before the hook ran (e.g. DOS line breaks)
    try:
        # read through the adapter, as the engine reads them, on whichever release runs
        jobs = {j.job_id: j for j in CliSlurm(env).jobs()}
        for job_id, canonical in accepted.items():
            assert jobs[job_id].admin_comment == (f"hops:{canonical}" if canonical else ""), job_id
    finally:
        if accepted:
            minicluster.run(["scancel", *accepted], check=False)
    print(f"\nsbatch differential: {len(cases)} cases, {checked} answered by the hook's verdict "
          f"({refused_by_hook} refused by the hook), {not_hook} refused by sbatch first")
    assert wrong == []
    assert checked >= 80 and refused_by_hook >= 20
