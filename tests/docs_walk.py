"""The admin guide's install path as a test walks it (issue 33): the code blocks of docs/admin-guide.md's
sections "Install", "The submit hook", "Hops partitions", "Enable" and "Leaving Hops", each marked in the
guide by an HTML comment ``<!-- walk: ID -->`` on the line before it, pulled out in order.

Which blocks the live test walks (tests/hops_slurm/site/test_admin_guide_live.py) and which it cannot, with the
reason, are listed here; tests/test_admin_guide_walk.py checks, without a cluster, that every code block of
those sections is marked and listed, so a command added to the guide and not walked fails it. Lines of a
walked block that only a real host can run (systemctl, journalctl) are listed with the equivalent the live
test does on the minicluster instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "admin-guide.md"
SECTIONS = ("Install", "The submit hook", "Hops partitions (`[slurm] partitions`)", "Enable", "Leaving Hops")
MARKER = re.compile(r"^\s*<!-- walk: ([a-z0-9-]+) -->\s*$")
FENCE = re.compile(r"^\s*```")

#: the blocks the live test walks, in the guide's order, and what walking each one shows
WALKED: dict[str, str] = {
    "install-build": "the wheel built in a copy of the checkout, a virtualenv with it, `site files`, the command on PATH",
    "install-config": "the shipped sample copied where the commands read it; `config check` accepts it",
    "install-hook": "the module files copied beside slurm.conf; the bad comment refused; `site check` exits 0",
    "job-script": "a #HOPS job of these two lines (and one that prints HOPS_GPUS) runs with its environment file",
    "site-hook-calls": "the two calls are the ones in the site's own hook the cluster runs",
    "partitions-config": "the keys (its first partition, hook_dir) in the configuration the daemon runs with",
    "partitions-file": "the file the daemon writes has this format",
    "enable-daemon": "the unit file copied; the daemon started as its ExecStart and Environment say",
    "inspect": "each command exits 0 against the running daemon's configuration",
    "enable-failopen": "the fail-open unit and timer are in the package",
    "leave-stop": "the daemon stopped",
    "leave": "`site leave --dry-run`, then `site leave`: exit 0, the held job handed to Slurm",
    "leave-reconfigure": "the named lines taken out, slurmctld reconfigured, the module files removed",
}
#: the blocks it cannot walk here, and why
NOT_WALKED: dict[str, str] = {
    "install-shipped-hook": "the site-shaped cluster keeps its own hook (site-hook-calls); the shipped hook is what "
                            "tests/hops_slurm/site/test_site_live.py's `site files` and every other live test install",
    "calibrate": "the minicluster's GPUs are device files without GPUs behind them; tests/hops_slurm/engine/"
                 "test_calibration_files.py shows what the engine does with the files",
    "site-hook-example": "a Lua example, not a command; tests/hooks/test_hops_submit_module.py runs the same hook",
}
#: lines of walked blocks that need a real host (systemd, its journal): what the live test does instead
HOST_ONLY: dict[str, str] = {
    "systemctl daemon-reload && systemctl enable --now hops-slurm": "the unit's ExecStart run with its Environment",
    "journalctl -u hops-slurm -f": "the daemon's output, read from its log file",
    "systemctl daemon-reload && systemctl enable --now hops-slurm-failopen.timer":
        "nothing: the configuration keeps [failopen] off (fail-open has its own live test)",
    "systemctl restart slurmctld": "`scontrol reconfigure` (the minicluster's slurmctld runs the Lua plugin already)",
    "systemctl disable --now hops-slurm hops-slurm-failopen.timer": "the daemon stopped with SIGTERM, as systemd does",
}


@dataclass(frozen=True)
class Block:
    """One code block of the guide: its marker (None when unmarked), section and lines (dedented)."""
    id: str | None
    section: str
    fenced: bool
    lines: tuple[str, ...]

    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)

    def commands(self) -> list[str]:
        """The block's command lines: without comment lines, blank lines and trailing ``# ...`` remarks."""
        out = []
        for line in self.lines:
            text = re.sub(r"\s+#\s.*$", "", line).strip()
            if text and not text.startswith("#"):
                out.append(text)
        return out


def _dedent(lines: list[str]) -> tuple[str, ...]:
    width = min((len(x) - len(x.lstrip()) for x in lines if x.strip()), default=0)
    return tuple(x[width:] for x in lines)


def _indented_code_start(line: str) -> bool:
    stripped = line.lstrip()
    return bool(stripped) and len(line) - len(stripped) >= 4 and not re.match(r"([-*]|\d+\.)\s", stripped)


def blocks(text: str | None = None) -> list[Block]:
    """Every code block (fenced, or indented after a blank line) of :data:`SECTIONS`, in order."""
    lines = (GUIDE.read_text() if text is None else text).splitlines()
    out: list[Block] = []
    section = ""
    marker: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            section, marker = line[3:].strip(), None
        elif section in SECTIONS and (m := MARKER.match(line)):
            marker = m.group(1)
        elif section in SECTIONS and FENCE.match(line):
            end = next(j for j in range(i + 1, len(lines)) if FENCE.match(lines[j]))
            out.append(Block(marker, section, True, _dedent(lines[i + 1:end])))
            marker, i = None, end
        elif section in SECTIONS and (i == 0 or not lines[i - 1].strip() or MARKER.match(lines[i - 1])) \
                and _indented_code_start(line):
            end = i
            while end < len(lines) and lines[end].strip():
                end += 1
            out.append(Block(marker, section, False, _dedent(lines[i:end])))
            marker, i = None, end - 1
        elif line.strip() and not line.lstrip().startswith("<!--"):
            marker = None  # a marker names the block right after it (blank lines between allowed)
        i += 1
    return out


def walked_blocks() -> dict[str, Block]:
    """The walked blocks by id (every block of the guide that has a marker)."""
    return {b.id: b for b in blocks() if b.id is not None}
