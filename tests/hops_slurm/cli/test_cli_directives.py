"""``hops-slurm directives check``: canonical form on stdout, the error (naming the key) on stderr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hops_slurm.cli import main

VECTORS = Path(__file__).resolve().parents[2] / "data" / "directives"


def test_valid_script_prints_canonical(capsys: pytest.CaptureFixture[str]) -> None:
    script = VECTORS / "valid" / "range_levels.sh"
    assert main(["directives", "check", str(script)]) == 0
    assert capsys.readouterr().out.strip().endswith("gpus=2,7,11,16 samples=1000000 batch-size=64 model=resnet50")


def test_invalid_script_fails_naming_key(capsys: pytest.CaptureFixture[str]) -> None:
    script = VECTORS / "invalid" / "duplicate_count.sh"
    assert main(["directives", "check", str(script)]) == 1
    assert "#HOPS gpus: duplicate count 2" in capsys.readouterr().err


def test_json_output_parses(capsys: pytest.CaptureFixture[str]) -> None:
    good, bad = VECTORS / "valid" / "basic_list.sh", VECTORS / "invalid" / "unknown_key.sh"
    assert main(["directives", "check", "--json", str(good), str(bad)]) == 1
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows[0]["ok"] and rows[0]["directives"]["gpus"] == [1, 2, 4, 8]
    assert not rows[1]["ok"] and rows[1]["key"] == "colour"
