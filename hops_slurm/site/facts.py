"""What the running Slurm has, as ``hops-slurm site check`` judges it: read once, then pure data.

Where it sits: first step of ``site check`` (and ``site leave`` reads the hook's place from it). It runs
Slurm's clients (``scontrol show config``, ``scontrol show partition --oneliner``: one text form on 22.05,
24.11 and 26.05; nodes and reservations through :class:`hops_slurm.slurm.cli.CliSlurm`, read by the
release's dialect) and reads the submit hook beside ``slurm.conf`` (``job_submit.lua``) and the Hops
module's directory. The parsers are pure (text in, data out) and bounded: Slurm's output and the site's
files are read up to fixed sizes, so a broken or hostile file cannot grow what is held. Nothing here
decides anything (:mod:`hops_slurm.site.check` does).
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from hops_slurm.slurm.api import SlurmError, SlurmNode, SlurmReservation
from hops_slurm.slurm.parse import expand_hostlist

CONFIG_ARGV = ["scontrol", "show", "config"]
PARTITION_ARGV = ["scontrol", "show", "partition", "--oneliner"]
MAX_LINES = 10_000  # lines of Slurm output read
MAX_LINE = 65_536  # characters of one line
MAX_HOOK_BYTES = 1 << 20  # bytes of job_submit.lua read
MAX_PARTITION_FILE = 4096  # bytes of hops-partitions read (what the hook reads: interface 3)
HOOK_FILE = "job_submit.lua"
MODULE_FILE = "hops_submit.lua"
OFFER_MODULE = "hops_offer.lua"
PARTITION_FILE = "hops-partitions"
OFFER_FILE = "hops-offer"
#: the files the hook opens in the module's directory (slurmctld holds its job lock while it reads them)
HOOK_READS = ("hops_directives.lua", MODULE_FILE, OFFER_MODULE, PARTITION_FILE, OFFER_FILE)
PARTITION_HEADER = "hops-partitions 1"
_PART_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
_CONFIG_LINE = re.compile(r"([A-Za-z][A-Za-z0-9_]{0,63})\s{0,200}=\s?(.{0,4096})")
#: ``dofile("/etc/slurm/hops_submit.lua")`` (or ``loadfile``) with a literal path: where the site loads the module
_DOFILE = re.compile(r"""(?:dofile|loadfile)\s{0,8}\(?\s{0,8}["']([^"'\n]{1,4096})["']""")


def _bounded_lines(text: str) -> list[str]:
    return [line[:MAX_LINE] for line in text.splitlines()[:MAX_LINES]]


def parse_show_config(text: str) -> dict[str, str]:
    """``scontrol show config``: ``Key = Value`` lines -> {Key: Value}; the first of a key wins (later
    sections repeat some names for plugins' own files); headings and blank lines are skipped."""
    out: dict[str, str] = {}
    for line in _bounded_lines(text):
        m = _CONFIG_LINE.fullmatch(line.strip())
        if m and m[1] not in out:
            out[m[1]] = m[2].strip()
    return out


@dataclass(frozen=True)
class PartitionFacts:
    """One partition as ``scontrol show partition --oneliner`` prints it."""

    name: str
    nodes: tuple[str, ...]
    fields: Mapping[str, str]

    @property
    def default(self) -> bool:
        return self.fields.get("Default", "NO").upper() == "YES"

    @property
    def state(self) -> str:
        return self.fields.get("State", "UP").upper()

    def def_mem(self) -> str:
        """``DefMemPerCPU=1000`` (or per GPU / node) when the partition sets a default memory; else ""."""
        for key in ("DefMemPerCPU", "DefMemPerGPU", "DefMemPerNode"):
            value = self.fields.get(key, "")
            if value and value.upper() not in ("UNLIMITED", "0", "(NULL)", "N/A"):
                return f"{key}={value}"
        return ""


def parse_partitions(text: str) -> dict[str, PartitionFacts]:
    """``scontrol show partition --oneliner``: name -> facts. Raises ValueError naming a line that is not
    a partition (a name outside Slurm's characters, a node list that does not expand)."""
    out: dict[str, PartitionFacts] = {}
    for i, line in enumerate((ln for ln in _bounded_lines(text) if ln.strip()), start=1):
        fields: dict[str, str] = {}
        for word in line.split():
            key, sep, value = word.partition("=")
            if sep and key not in fields:
                fields[key] = value
        name = fields.get("PartitionName", "")
        if not _PART_NAME.fullmatch(name):
            raise ValueError(f"scontrol show partition line {i}: {name[:40]!r} is not a partition name")
        try:
            nodes = tuple(expand_hostlist(fields.get("Nodes", "")))
        except ValueError as exc:
            raise ValueError(f"partition {name}: Nodes= does not expand ({exc})") from None
        out[name] = PartitionFacts(name, nodes, fields)
    return out


def parse_partition_file(text: str) -> tuple[list[str], str]:
    """The hook's partition file (interface 3 of the design: ``hops-partitions 1`` then ``partition <name>``
    lines): (the partitions, "" or one line naming what is wrong), read as the hook reads it."""
    lines = text[:MAX_PARTITION_FILE].splitlines()
    if not lines or lines[0].strip() != PARTITION_HEADER:
        return [], f"its first line is not {PARTITION_HEADER!r}"
    names: list[str] = []
    for n, line in enumerate(lines[1:], start=2):
        words = line.split()
        if not words:
            continue
        if len(words) != 2 or words[0] != "partition" or not _PART_NAME.fullmatch(words[1]):
            return names, f"line {n} is not 'partition <name>'"
        names.append(words[1])
    if not names:
        return [], "it names no partition"
    return names, ""


def code_lines(lua: str) -> list[tuple[int, str]]:
    """(line number, text) of the Lua lines outside comments: whole-line ``--`` comments and ``--[[ ... ]]``
    blocks (a line that opens or closes a block counts as comment)."""
    out: list[tuple[int, str]] = []
    in_block = False
    for n, line in enumerate(lua.splitlines()[:MAX_LINES], start=1):
        stripped = line[:MAX_LINE].strip()
        if in_block:
            in_block = "]]" not in stripped
            continue
        if stripped.startswith("--[[") or stripped.startswith("--[=["):
            in_block = "]]" not in stripped[4:] and "]=]" not in stripped[4:]
            continue
        if not stripped.startswith("--"):
            out.append((n, line[:MAX_LINE]))
    return out


def module_path_in(lua: str) -> Path | None:
    """The literal path a hook loads the Hops module from (``dofile("/etc/slurm/hops_submit.lua")``); None
    when it computes the path (the shipped job_submit.lua loads it from its own directory)."""
    for _, line in code_lines(lua):
        m = _DOFILE.search(line[:4096])
        if m and m[1].endswith(MODULE_FILE) and m[1].startswith("/"):
            return Path(m[1])
    return None


def hops_lines(lua: str) -> list[tuple[int, str]]:
    """The lines of a site's hook that load or call the Hops module (what leaving takes out)."""
    return [(n, line.strip()[:200]) for n, line in code_lines(lua)
            if MODULE_FILE in line or re.search(r"\.job_(?:submit|modify)\s{0,8}\(", line[:4096])]


@dataclass(frozen=True)
class HookFacts:
    """The submit hook Slurm loads (``job_submit.lua`` beside ``slurm.conf``) and the Hops module's place."""

    conf_dir: Path | None  # the directory of slurm.conf (None: not known)
    hook_text: str | None  # job_submit.lua (first MAX_HOOK_BYTES), None when missing or unreadable
    hook_error: str = ""  # why it could not be read ("" when read or simply absent)
    module_dir: Path | None = None
    module_files: Mapping[str, bool] = field(default_factory=dict)  # file name -> present
    partition_file: str | None = None  # hops-partitions (first MAX_PARTITION_FILE bytes), None when missing
    dir_owner: int | None = None  # the module directory's owner (uid) and mode; None: not read
    dir_mode: int | None = None
    kinds: Mapping[str, str] = field(default_factory=dict)  # file the hook reads -> "file", "missing", "FIFO", ...


def file_kind(path: Path) -> str:
    """What is at ``path``, without opening it (a FIFO would block the reader): "file", "missing",
    "symbolic link", "FIFO", "directory", "special file" or "unreadable (...)"."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    for test, kind in ((stat.S_ISREG, "file"), (stat.S_ISLNK, "symbolic link"), (stat.S_ISFIFO, "FIFO"),
                       (stat.S_ISDIR, "directory")):
        if test(st.st_mode):
            return kind
    return "special file"


def _read_text(path: Path, limit: int) -> tuple[str | None, str]:
    try:
        with path.open("rb") as fh:
            return fh.read(limit).decode("utf-8", errors="replace"), ""
    except FileNotFoundError:
        return None, ""
    except OSError as exc:
        return None, f"{path}: {exc.strerror or exc}"


def read_hook(conf_dir: Path | None, hook_dir: Path | None) -> HookFacts:
    """The hook beside ``slurm.conf`` and the module's directory: ``hook_dir`` (``[engine] hook_dir``),
    else the literal path the hook loads the module from, else slurm.conf's directory."""
    text, error = _read_text(conf_dir / HOOK_FILE, MAX_HOOK_BYTES) if conf_dir else (None, "")
    module_dir = hook_dir
    if module_dir is None and text is not None:
        literal = module_path_in(text)
        module_dir = literal.parent if literal else None
    module_dir = module_dir or conf_dir
    if module_dir is None:
        return HookFacts(conf_dir, text, error)
    files = {name: (module_dir / name).is_file() for name in (MODULE_FILE, OFFER_MODULE)}
    kinds = {name: file_kind(module_dir / name) for name in HOOK_READS}
    part_text = _read_text(module_dir / PARTITION_FILE, MAX_PARTITION_FILE)[0] if kinds[PARTITION_FILE] == "file" else None
    try:
        st = os.stat(module_dir)
        owner, mode = st.st_uid, stat.S_IMODE(st.st_mode)
    except OSError:
        owner = mode = None
    return HookFacts(conf_dir, text, error, module_dir, files, part_text, owner, mode, kinds)


@dataclass(frozen=True)
class SiteFacts:
    """Everything ``site check`` judges. A part that could not be read is None with its reason in ``errors``."""

    config: Mapping[str, str]
    partitions: Mapping[str, PartitionFacts]
    nodes: tuple[SlurmNode, ...] | None
    reservations: tuple[SlurmReservation, ...] | None
    hook: HookFacts
    errors: Mapping[str, str] = field(default_factory=dict)

    @property
    def version(self) -> str:
        return self.config.get("SLURM_VERSION", "")


def run_client(argv: list[str], env: Mapping[str, str] | None = None, timeout: float = 30.0) -> str:
    """A Slurm client's standard output; :class:`SlurmError` with its message when it fails."""
    try:
        proc = subprocess.run(argv, env=dict(env) if env is not None else None, capture_output=True, text=True,
                              encoding="utf-8", errors="replace", timeout=timeout, check=False)
    except FileNotFoundError:
        raise SlurmError(f"{argv[0]} not found: install the Slurm client commands") from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"`{' '.join(argv)}`: no answer within {timeout:g} s: is slurmctld up?") from None
    if proc.returncode != 0:
        said = (proc.stderr or proc.stdout).strip().splitlines()
        raise SlurmError(f"`{' '.join(argv)}` failed (exit {proc.returncode}): {said[0][:200] if said else 'no message'}")
    return proc.stdout


def read_facts(hook_dir: Path | None, env: Mapping[str, str] | None = None) -> SiteFacts:
    """Read the running Slurm. ``scontrol show config`` must answer (else :class:`SlurmError`: nothing can be
    judged); partitions, nodes and reservations that cannot be read are named in ``errors``."""
    from hops_slurm.slurm.cli import CliSlurm

    config = parse_show_config(run_client(CONFIG_ARGV, env))
    if "SLURM_VERSION" not in config:
        raise SlurmError("`scontrol show config` printed no SLURM_VERSION: is this Slurm's scontrol?")
    errors: dict[str, str] = {}
    partitions: dict[str, PartitionFacts] = {}
    try:
        partitions = parse_partitions(run_client(PARTITION_ARGV, env))
    except (SlurmError, ValueError) as exc:
        errors["partitions"] = str(exc)
    api = CliSlurm(env)
    nodes: tuple[SlurmNode, ...] | None = None
    reservations: tuple[SlurmReservation, ...] | None = None
    try:
        nodes = tuple(api.nodes())
    except SlurmError as exc:
        errors["nodes"] = str(exc)
    try:
        reservations = tuple(api.reservations())
    except SlurmError as exc:
        errors["reservations"] = str(exc)
    conf = config.get("SLURM_CONF", "")
    conf_dir = Path(conf).parent if conf.startswith("/") else None
    return SiteFacts(config, partitions, nodes, reservations, read_hook(conf_dir, hook_dir), errors)
