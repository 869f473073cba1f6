"""hooks/job_submit.lua's parser, in Lua 5.1 (what Slurm 22.05 links), against the shared vectors.

The hook must agree with the Python model exactly: the same canonical form for every valid script and
the same key and message for every invalid one. The live check (the hook inside a real slurmctld,
through sbatch) is in tests/hooks/test_job_submit_live.py.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from hops_slurm.directives import parse_script
from hops_slurm.errors import DirectiveError

ROOT = Path(__file__).resolve().parents[2]
HOOK = ROOT / "hooks" / "job_submit.lua"
RUNNER = Path(__file__).resolve().parent / "run_vectors.lua"
VECTORS = ROOT / "tests" / "data" / "directives"


def _lua() -> str:
    lua = shutil.which("lua5.1")
    assert lua, "lua5.1 is needed (apt-get install lua5.1; `hops-slurm minicluster install` does it)"
    return lua


def run_hook(scripts: list[Path]) -> dict[str, list[str]]:
    out = subprocess.run([_lua(), str(RUNNER), str(HOOK), *map(str, scripts)], capture_output=True, text=True, check=True)
    rows = {}
    for line in out.stdout.splitlines():
        kind, path, *rest = line.split("\t")
        rows[Path(path).stem] = [kind, *rest]
    return rows


def python_view(script: Path) -> list[str]:
    try:
        parsed = parse_script(script.read_text())
    except DirectiveError as exc:
        return ["ERR", exc.key, str(exc)]
    return ["NONE"] if parsed is None else ["OK", parsed.canonical()]


def test_hook_matches_python_on_every_vector() -> None:
    scripts = sorted(VECTORS.glob("*/*.sh"))
    assert len(scripts) >= 30
    lua = run_hook(scripts)
    mismatches = {s.stem: (lua.get(s.stem), python_view(s)) for s in scripts if lua.get(s.stem) != python_view(s)}
    assert mismatches == {}


def test_hook_gives_the_vector_canonical_forms() -> None:
    scripts = sorted((VECTORS / "valid").glob("*.sh"))
    lua = run_hook(scripts)
    for s in scripts:
        assert lua[s.stem] == ["OK", s.with_suffix(".canonical").read_text().strip()], s.stem


@pytest.mark.parametrize("text", ["#!/bin/bash\nhostname\n", "#!/bin/bash\n#SBATCH -N 1\n\n#HOP gpus=1\n"])
def test_non_hops_scripts_are_left_alone(tmp_path: Path, text: str) -> None:
    script = tmp_path / "plain.sh"
    script.write_text(text)
    assert run_hook([script])["plain"] == ["NONE"]
