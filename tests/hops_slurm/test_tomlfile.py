"""TOML with bounded nesting (hops_slurm/tomlfile.py): deep arrays, inline tables and dotted keys are one
line naming the depth and the line, before tomllib recurses or builds a key's prefixes; every TOML file the
CLI reads goes through it."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from hops_slurm.cli import main
from hops_slurm.tomlfile import MAX_DEPTH, TooDeep, loads

DEEP = {
    "arrays": "a = " + "[" * 100_000 + "]" * 100_000 + "\n",
    "inline tables": "a = " + "{b=" * 100_000 + "1" + "}" * 100_000 + "\n",
    "dotted key": "a" + ".a" * 100_000 + " = 1\n",
    "table header": "[" + "a." * 100_000 + "a]\n",
    "second line": "ok = 1\nx = " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n",
}


@pytest.mark.parametrize("name", DEEP)
def test_deep_nesting_is_refused_at_once(name: str) -> None:
    with pytest.raises(TooDeep, match=r"at line (1|2): refused") as err:
        loads(DEEP[name])
    assert isinstance(err.value, tomllib.TOMLDecodeError)
    assert f"more than {MAX_DEPTH}" in str(err.value)


def test_what_hops_slurm_files_hold_parses_as_tomllib_parses_it() -> None:
    text = ('a = [[1, [2]], {b = {c = [1.5, 2.5]}}]\n[x.y.z]\nq.r = "s.t.[{#"\nlit = \'a.b[\'\n'
            'multi = """x\n[[[ "\\"" """\n' + "deep = " + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "\n"
            + "k" + ".k" * (MAX_DEPTH - 1) + " = 1 # a.b.c.d [[[[\n")
    assert loads(text) == tomllib.loads(text)
    for root in (Path(__file__).resolve().parents[2] / d for d in ("etc", "tests/data")):
        for path in root.rglob("*.toml"):
            assert loads(path.read_text()) == tomllib.loads(path.read_text()), path


@pytest.mark.parametrize("command", [["config", "check"], ["whatif", "x.json", "--assumptions"],
                                     ["whatif", "x.json", "--cluster"], ["simulate", "--cluster"],
                                     ["minicluster", "status", "--spec"]])
def test_every_toml_the_cli_reads_is_bounded(command: list[str], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    deep = tmp_path / "deep.toml"
    deep.write_text(DEEP["arrays"])
    export = tmp_path / "x.json"
    export.write_text('{"meta": {"plugin": {"type": "openapi/dbv0.0.38"}}, "jobs": []}')
    argv = [str(export) if a == "x.json" else a for a in command] + [str(deep)]
    assert main(argv) != 0
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "nested more than" in err and "RecursionError" not in err, err
