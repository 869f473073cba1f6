"""Run the submit hook module (hooks/hops_submit.lua) in lua5.1, installed in a directory of its own as a
site installs it: the module files, a hops-partitions file and optionally a hops-offer file beside it.

``slurm`` in the prelude is a stand-in for the plugin's C API (only what the hook calls; log_user
writes to stderr so a test can read the one line a user gets); slurmctld itself runs the hook in the
live tests. The test's Lua code sees ``H`` (the module table) and ``DIR`` (the install directory)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from hops_slurm.hooklua import HOOKS, MODULE_FILES, SITE_HOOK

PRELUDE = r"""
slurm = { SUCCESS = 0, ERROR = -1,
	log_user = function(fmt, ...) io.stderr:write(string.format(fmt, ...), "\n") end,
	log_info = function(...) end }
DIR = arg[1]
H = dofile(DIR .. "/hops_submit.lua")
"""


def install(where: Path, partitions: tuple[str, ...] | None = ("hops",), offer: str | None = None,
            files: tuple[str, ...] = MODULE_FILES) -> Path:
    """A hook directory: ``files`` from hooks/, the shipped job_submit.lua, hops-partitions (None: none)."""
    where.mkdir(parents=True, exist_ok=True)
    for name in files:
        shutil.copyfile(HOOKS / name, where / name)
    shutil.copyfile(SITE_HOOK, where / "job_submit.lua")
    if partitions is not None:
        (where / "hops-partitions").write_text("hops-partitions 1\n" + "".join(f"partition {p}\n" for p in partitions))
    if offer is not None:
        (where / "hops-offer").write_text(offer)
    return where


def run(where: Path, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    lua = shutil.which("lua5.1")
    assert lua, "lua5.1 is needed (apt-get install lua5.1)"
    runner = where / "case.lua"
    runner.write_text(PRELUDE + code)
    return subprocess.run([lua, str(runner), str(where), *args], capture_output=True, text=True, check=True, timeout=60)


def hops_script(gpus: str = "1,2,4") -> str:
    """A Lua string literal: a batch script with one #HOPS line."""
    return f'"#!/bin/sh\\n#HOPS gpus={gpus} samples=1K batch-size=8 model=resnet18\\ntrue\\n"'
