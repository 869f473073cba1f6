"""The submit hook's parser run outside slurmctld: ``hooks/job_submit.lua`` in a ``lua5.1`` subprocess.

Where it sits: beside :mod:`hops_slurm.directives` (the Python implementation of the same grammar);
used by the differential tests (``tests/hooks/``) and by ``hops-slurm bench hook`` to feed many inputs
through the hook in one process (``hooks/run_parser.lua --batch``). The Slurm side is faked there by a
table of two constants; the hook inside a real slurmctld is exercised by the live tests and the bench.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hops_slurm.bundled import bundle_root
from hops_slurm.errors import HopsError

HOOKS = bundle_root() / "hooks"  # the shipped hooks/ (hops_slurm.bundled)
HOOK = HOOKS / "hops_submit.lua"  # the Hops module (job_submit.lua calls it)
SITE_HOOK = HOOKS / "job_submit.lua"  # the complete hook for a site without one of its own
#: what the Hops module reads from its own directory, beside the site's job_submit.lua
MODULE_FILES = ("hops_submit.lua", "hops_directives.lua", "hops_offer.lua")
RUNNER = HOOKS / "run_parser.lua"


@dataclass(frozen=True)
class Outcome:
    """What one parser made of one input: ``kind`` OK, NONE (not a Hops job), ERR, or INTERNAL (a bug)."""

    kind: str
    key: str = ""
    text: str = ""  # the canonical form (OK) or the message (ERR, INTERNAL)
    seconds: float | None = None  # with ``timed``: the hook's own CPU time for this input


def lua() -> str:
    found = shutil.which("lua5.1")
    if not found:
        raise HopsError("lua5.1 is needed to run the submit hook outside Slurm (apt-get install lua5.1)")
    return found


def run_batch(cases: list[tuple[bytes, bytes | None]], timed: bool = False, hook: Path = HOOK) -> list[Outcome]:
    """Each (script, comment) through the hook's ``parse_job``, in one lua5.1 process."""
    with tempfile.NamedTemporaryFile(prefix="hops-hook-", suffix=".bin") as f:
        for script, comment in cases:
            f.write(f"{len(script)} {-1 if comment is None else len(comment)}\n".encode())
            f.write(script)
            if comment is not None:
                f.write(comment)
        f.flush()
        cmd = [lua(), str(RUNNER), str(hook), "--batch", f.name] + (["--time"] if timed else [])
        out = subprocess.run(cmd, capture_output=True, check=False)
    if out.returncode != 0:
        raise HopsError(f"lua5.1 {RUNNER.name} failed: {out.stderr.decode(errors='replace').strip()[:500]}")
    lines = out.stdout.decode("ascii", errors="backslashreplace").split("\n")[: len(cases)]
    if len(lines) != len(cases):
        raise HopsError(f"lua5.1 {RUNNER.name} answered {len(lines)} of {len(cases)} inputs")
    return [_outcome(line, timed) for line in lines]


def _outcome(line: str, timed: bool) -> Outcome:
    fields = line.split("\t")
    seconds = float(fields.pop()) if timed else None
    kind = fields[0]
    if kind == "ERR":
        return Outcome("ERR", fields[1], "\t".join(fields[2:]), seconds)
    return Outcome(kind, "", "\t".join(fields[1:]), seconds)


def run_python(script: bytes, comment: bytes | None) -> Outcome:
    """The same input through :func:`hops_slurm.directives.parse_script`, as an :class:`Outcome`."""
    from hops_slurm.directives import parse_script
    from hops_slurm.errors import DirectiveError

    try:
        parsed = parse_script(script, comment)
    except DirectiveError as exc:
        return Outcome("ERR", exc.key, str(exc))
    except Exception as exc:  # noqa: BLE001 - a bug in the parser: reported as such, compared as such
        return Outcome("INTERNAL", "", f"{type(exc).__name__}: {exc}")
    return Outcome("NONE") if parsed is None else Outcome("OK", "", parsed.canonical())


def run_verdicts(requests: list[dict[str, object]], partitions_file: Path, hook: Path = HOOK) -> list[str]:
    """Each request (``job_desc`` fields as sbatch fills them in; ``script`` and ``comment`` as bytes) through
    the hook module's ``verdict``, with the Hops partitions read from ``partitions_file`` by the module's own
    reader; one line per request: ``NONE``, ``ERR\\t<message>`` or
    ``OK\\t<canonical>\\t<partitions>\\t<changed fields>\\t<note>`` (``hooks/run_parser.lua --verdict``)."""
    with tempfile.NamedTemporaryFile(prefix="hops-hook-", suffix=".bin") as f:
        for req in requests:
            items = [(k, v) for k, v in req.items() if v is not None]
            f.write(f"{len(items)}\n".encode())
            for key, value in items:
                raw = value if isinstance(value, bytes) else str(value).encode("utf-8", "surrogateescape")
                f.write(f"{key} {len(raw)}\n".encode() + raw)
        f.flush()
        cmd = [lua(), str(RUNNER), str(hook), "--verdict", f.name, str(partitions_file)]
        out = subprocess.run(cmd, capture_output=True, check=False)
    if out.returncode != 0:
        raise HopsError(f"lua5.1 {RUNNER.name} failed: {out.stderr.decode(errors='replace').strip()[:500]}")
    lines = out.stdout.decode("ascii", errors="backslashreplace").split("\n")[: len(requests)]
    if len(lines) != len(requests):
        raise HopsError(f"lua5.1 {RUNNER.name} answered {len(lines)} of {len(requests)} requests")
    return lines


def verdict_line(v: object) -> str:
    """A :class:`hops_slurm.submit_policy.Verdict` in :func:`run_verdicts`'s line format."""
    from hops_slurm.submit_policy import Verdict

    assert isinstance(v, Verdict)
    if v.kind == "NONE":
        return "NONE"
    if v.kind == "ERR":
        return "ERR\t" + v.message.replace("\t", " ").replace("\n", " ")
    changes = " ".join(f"{k}={v.changes[k]}" for k in ("tres_per_job", "tres_per_node") if k in v.changes)
    return "\t".join(["OK", v.canonical, ",".join(v.partitions), changes, v.note])
