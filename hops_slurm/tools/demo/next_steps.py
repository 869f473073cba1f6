"""What ``make demo`` prints at its end: the commands that look at what it made, each as it can be run.

Where it sits: :func:`hops_slurm.tools.demo.run.run_demo` calls :func:`demo_steps` once the cluster is down
(or left up) and prints :func:`render`'s block; :mod:`hops_slurm.tools.demo.export` wrote the sacct export
a step may name. Pure: it builds text from paths, it runs nothing.

A step is a comment line (``# ...``, what the command shows) and the command. The command starts with
the ``hops-slurm`` the demo itself was started as (``.venv/bin/hops-slurm`` under ``make demo``), so it
runs as printed from the same folder without activating the venv; paths under that folder are printed
relative to it, others absolute. The block names that folder only as "the folder the demo ran in": its
absolute path is one machine's, and the demo's output is committed (docs/demo/make-demo-output.txt). The
block is valid shell: pasting it whole runs every command.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: The first line of the block (tests find the block by it).
HEADER = "== look at what the demo made (run these from the folder the demo ran in):"


@dataclass(frozen=True)
class Step:
    what: str  # one line: what the command shows
    args: tuple[str | Path, ...]  # the arguments after ``hops-slurm``


def hops_slurm_command(argv0: str | None = None, executable: str | None = None) -> list[str]:
    """How to call ``hops-slurm`` again: as this process was called when that was the ``hops-slurm`` script
    (``.venv/bin/hops-slurm``), else the script beside this interpreter (``python -c ...`` in tests),
    shortened to ``hops-slurm`` when that is what ``PATH`` finds; plain ``hops-slurm`` otherwise."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    executable = sys.executable if executable is None else executable
    if Path(argv0).name == "hops-slurm":
        return [argv0]
    beside = Path(executable).parent / "hops-slurm"
    if beside.is_file():
        found = shutil.which("hops-slurm")
        if found and Path(found).resolve() == beside.resolve():
            return ["hops-slurm"]
        return [str(beside)]
    return ["hops-slurm"]


def shown(path: Path, cwd: Path) -> str:
    """``path`` relative to ``cwd`` when it lies under it, else absolute."""
    path = Path(path).absolute()
    try:
        return str(path.relative_to(cwd.absolute()))
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class DemoOutputs:
    """Where one demo run left what a reader looks at."""

    records: Path  # the daemon's records.sqlite (Hops run)
    config: Path  # the demo's site config (its paths.state_dir holds the engine's state)
    report_dir: Path | None  # report.md, plots, both runs' records (None: --out was not written)
    slurm_records: Path | None  # the Slurm-backfill run's records (None: --hops-only)
    export: Path | None  # a sacct export of the demo's own jobs (cluster with accounting), else None
    example_export: Path | None  # a recorded sacct export to try whatif on when there is no own one


def demo_steps(o: DemoOutputs) -> list[Step]:
    steps = [
        Step("the Hops run's jobs, one row each like sacct (the daemon's records)", ("report", "--records", o.records)),
        Step("their summary: RAQLR, latency ratios, wait, JCT, GPU utilisation", ("report", "--records", o.records, "--summary")),
    ]
    if o.slurm_records is not None:
        steps.append(Step("the same jobs under Slurm's backfill (their records, kept beside the report)",
                          ("report", "--records", o.slurm_records)))
    steps.append(Step("the engine's latency-ratio queue from its state (empty now that every job has ended)",
                      ("queue", "--config", o.config)))
    if o.export is not None:
        steps.append(Step("the demo's jobs as slurmdbd recorded them, replayed under simulated Slurm backfill and Hops",
                          ("whatif", o.export)))
    elif o.example_export is not None:
        steps.append(Step("a sacct export replayed under simulated Slurm backfill and Hops: the demo's cluster keeps no "
                          "accounting, so one recorded on the minicluster (a spec with `accounting = true` exports the "
                          "demo's own)", ("whatif", o.example_export)))
    return steps


def render(steps: Sequence[Step], command: Sequence[str], cwd: Path, report_dir: Path | None = None) -> str:
    """The block the demo prints: a header, where the report page is, then each step's comment and command."""
    lines = [HEADER]
    if command and "/" in command[0]:  # the hops-slurm script by its path: from here, as the other paths
        command = [shown(Path(command[0]), cwd), *command[1:]]
    if report_dir is not None:
        lines.append(f"   # the report page, its plots and the runs' records: {shown(report_dir, cwd)}/ "
                     "(report.md, comparison.md, *.png, records-*.jsonl)")
    for step in steps:
        args = [shown(a, cwd) if isinstance(a, Path) else a for a in step.args]
        lines += [f"   # {step.what}", "   " + shlex.join([*command, *args])]
    return "\n".join(lines) + "\n"


def commands(block: str) -> list[list[str]]:
    """The commands of a printed block, each as argv (the test that runs them as printed reads them so)."""
    body = block.split(HEADER, 1)[1].splitlines()[1:]
    out = []
    for line in body:
        text = line.strip()
        if not line.startswith("   ") or not text:
            break
        if not text.startswith("#"):
            out.append(shlex.split(text))
    return out
