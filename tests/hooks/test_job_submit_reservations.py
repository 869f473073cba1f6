"""The submit hook refuses users asking for the engine's reservations (hops-gate, hops-j<job>, hops-p<job>),
at submission and by ``scontrol update``, and lets root (the engine) use them. Run in Lua 5.1 with a stand-in
for the plugin's ``slurm`` table (only what the hook calls); slurmctld itself runs the hook in the live tests."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

HOOK = Path(__file__).resolve().parents[2] / "hooks" / "job_submit.lua"

CASE = """
slurm = { SUCCESS = 0, ERROR = -1, log_user = function(...) end, log_info = function(...) end }
dofile(arg[1])
local job = { reservation = arg[2] ~= "" and arg[2] or nil, script = "#!/bin/sh\\ntrue\\n" }
local uid = tonumber(arg[3])
print(slurm_job_submit(job, {}, uid), slurm_job_modify(job, {}, {}, uid))
"""


@pytest.mark.parametrize(("reservation", "uid", "expected"), [
    ("hops-j12", 1000, "-1\t-1"), ("hops-gate", 1000, "-1\t-1"), ("hops-p7", 1000, "-1\t-1"),
    ("hops-j12", 0, "0\t0"), ("maintenance", 1000, "0\t0"), ("", 1000, "0\t0"),
])
def test_users_cannot_ask_for_hops_reservations(tmp_path: Path, reservation: str, uid: int, expected: str) -> None:
    lua = shutil.which("lua5.1")
    assert lua, "lua5.1 is needed (apt-get install lua5.1)"
    runner = tmp_path / "case.lua"
    runner.write_text(CASE)
    out = subprocess.run([lua, str(runner), str(HOOK), reservation, str(uid)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == expected
