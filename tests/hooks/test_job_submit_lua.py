"""The submit hook's parser (hooks/hops_directives.lua), in Lua 5.1 (what Debian's Slurm links), against the shared vectors.

The hook must agree with the Python model exactly: the same canonical form for every valid script and
the same key and message for every invalid one. Generated inputs: test_differential.py. The live check
(the hook inside a real slurmctld, through sbatch) is in tests/hooks/test_job_submit_live.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hops_slurm.hooklua import Outcome, run_batch, run_python

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "tests" / "data" / "directives"


def _lua(scripts: list[Path]) -> dict[str, Outcome]:
    outcomes = run_batch([(s.read_bytes(), None) for s in scripts])
    return {s.stem: o for s, o in zip(scripts, outcomes)}


def test_hook_matches_python_on_every_vector() -> None:
    scripts = sorted(VECTORS.glob("*/*.sh"))
    assert len(scripts) >= 30
    lua = _lua(scripts)
    mismatches = {s.stem: (lua[s.stem], run_python(s.read_bytes(), None)) for s in scripts
                  if lua[s.stem] != run_python(s.read_bytes(), None)}
    assert mismatches == {}


def test_hook_gives_the_vector_canonical_forms() -> None:
    scripts = sorted((VECTORS / "valid").glob("*.sh"))
    lua = _lua(scripts)
    for s in scripts:
        assert lua[s.stem] == Outcome("OK", "", s.with_suffix(".canonical").read_text().strip()), s.stem


def test_hook_rejects_invalid_vectors_naming_the_key() -> None:
    scripts = sorted((VECTORS / "invalid").glob("*.sh"))
    lua = _lua(scripts)
    for s in scripts:
        expect = dict(line.split("=", 1) for line in s.with_suffix(".expect").read_text().splitlines() if line)
        got = lua[s.stem]
        assert got.kind == "ERR" and got.key == expect["key"] and expect["contains"] in got.text, (s.stem, got)


@pytest.mark.parametrize("text", [b"#!/bin/bash\nhostname\n", b"#!/bin/bash\n#SBATCH -N 1\n\n#HOP gpus=1\n",
                                  b"#!/bin/bash\n#HOPSTER gpus=1\n", b"", b"hostname\n#HOPS gpus=1\n"])
def test_non_hops_scripts_are_left_alone(text: bytes) -> None:
    assert run_batch([(text, None)]) == [Outcome("NONE")]
