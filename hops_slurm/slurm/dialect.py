"""Which Slurm the adapter talks to: the release decides the commands, the output's data_parser the reader.

Where it sits: between :class:`hops_slurm.slurm.cli.CliSlurm` (which runs the commands) and the readers
(:mod:`hops_slurm.slurm.read_v0038` for 22.05, :mod:`hops_slurm.slurm.read_data_parser` for 24.11 and 26.05).
``scontrol --version`` names the release, and :func:`dialect_for` gives the commands that read it
(``scontrol show job|nodes|reservation --json`` from 23.02 on; ``squeue/sinfo --json`` and ``scontrol -o
show reservation`` on 22.05). Each JSON answer names its own data_parser in ``meta``; :meth:`Dialect.read`
hands it to the reader of that version, after checking it is the one recorded for that release. A
release or a data_parser that was not recorded and checked (tests/data/slurm-output/) is refused with an
error naming it: never read by guesswork.
"""

from __future__ import annotations

import gc
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from hops_slurm.slurm import read_data_parser, read_v0038
from hops_slurm.slurm.api import SlurmError, SlurmJob, SlurmNode, SlurmReservation
from hops_slurm.slurm.parse import json_int
from hops_slurm.slurm.read_common import JobCache

T = TypeVar("T")


class UnsupportedSlurm(SlurmError):
    """A Slurm release or data_parser version this adapter does not read."""


@dataclass(frozen=True)
class Dialect:
    """The commands of one Slurm release series and how their output is read."""

    release: str  # "24.11"
    structured: bool  # scontrol --json (23.02 and later)
    data_parser: str  # what its JSON names in meta (recorded and checked field by field)
    #: ``squeue --json --jobs=..`` gives just those jobs (Slurm 24.05.1 and later: SchedMD commit ff14834,
    #: "Fix squeue --json not using filtering options"; 22.05's ignores every filter). Its JSON is the job
    #: listing's own (``OPENAPI_JOB_INFO_RESP``, with the per-node GPU indices: ``--json`` implies detail).
    filters_jobs: bool = False
    #: the job listing is read from squeue's text where it can be (:mod:`hops_slurm.slurm.read_text`): 22.05,
    #: whose JSON listing cannot be cut down to the jobs or fields asked for
    text_listing: bool = False

    def jobs_argv(self) -> list[str]:
        return ["scontrol", "show", "job", "--json"] if self.structured else ["squeue", "--json"]

    def job_argv(self, job_id: str) -> list[str]:
        # 22.05's squeue --json ignores -j: the listing is filtered instead
        return ["scontrol", "show", "job", str(job_id), "--json"] if self.structured else ["squeue", "--json"]

    def jobs_of_argv(self, job_ids: Sequence[str]) -> list[str]:
        """One read of just ``job_ids`` (only where :attr:`filters_jobs`)."""
        return ["squeue", "--json", "--jobs=" + ",".join(job_ids)]

    def nodes_argv(self) -> list[str]:
        return ["scontrol", "show", "nodes", "--json"] if self.structured else ["sinfo", "--json"]

    def reservations_argv(self) -> list[str]:
        return ["scontrol", "show", "reservation", "--json"] if self.structured else ["scontrol", "-o", "show", "reservation"]

    def jobs(self, text: str, cache: JobCache | None = None) -> list[SlurmJob]:
        """The jobs of a job listing (``cache``: the jobs of the last whole listing, reused where unchanged)."""
        if cache is None:
            return self.read(text, read_v0038.jobs, read_data_parser.jobs)
        return self.read(text, lambda data: read_v0038.jobs(data, cache), lambda data: read_data_parser.jobs(data, cache))

    def nodes(self, text: str) -> list[SlurmNode]:
        return self.read(text, read_v0038.nodes, read_data_parser.nodes)

    def reservations(self, text: str) -> list[SlurmReservation]:
        if not self.structured:
            return read_v0038.reservations(text)
        return self.read(text, None, read_data_parser.reservations)

    def read(self, text: str, v0038: Callable[[Mapping[str, Any]], list[T]] | None,
             data_parser: Callable[[Mapping[str, Any]], list[T]]) -> list[T]:
        """Decode one JSON answer and read it with the reader of the data_parser its ``meta`` names.
        Raises :class:`UnsupportedSlurm` for an unknown data_parser, :class:`SlurmError` for output that is
        not JSON, reports errors, or lacks what the reader needs."""
        was = gc.isenabled()
        gc.disable()  # a listing of 10,000 jobs is a million new objects, none of them garbage: half the time
        try:
            return self._read(text, v0038, data_parser)
        finally:
            if was:
                gc.enable()

    def _read(self, text: str, v0038: Callable[[Mapping[str, Any]], list[T]] | None,
              data_parser: Callable[[Mapping[str, Any]], list[T]]) -> list[T]:
        try:
            # strict=False: a raw control character inside a string (a job's name) is that string's;
            # json_int: an integer wider than Slurm prints is read as unset in linear time, never an error
            data = json.loads(text, strict=False, parse_int=json_int)
        except json.JSONDecodeError as exc:
            raise SlurmError(f"Slurm's output is not JSON ({exc.msg} at character {exc.pos}): {text[:120]!r}") from None
        if not isinstance(data, dict):
            raise SlurmError(f"Slurm's JSON output is not an object: {text[:120]!r}")
        errors = data.get("errors") or []
        if errors:
            raise SlurmError("Slurm reports: " + "; ".join(str(e.get("description") or e.get("error") or e)
                                                          if isinstance(e, dict) else str(e) for e in errors))
        parser = data_parser_of(data)
        reader = v0038 if parser in read_v0038.DATA_PARSERS else data_parser
        if parser != self.data_parser or reader is None:
            raise UnsupportedSlurm(f"Slurm {self.release} answered in {parser}, which hops-slurm does not read "
                                   f"(it reads Slurm {self.release} in {self.data_parser})")
        try:
            return reader(data)
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
            raise SlurmError(f"unexpected {parser} output from Slurm {self.release}: {type(exc).__name__} {exc}") from None


#: The releases read here, each recorded from the real daemons (tests/data/slurm-output/<release>/).
DIALECTS = {
    "22.05": Dialect("22.05", structured=False, data_parser="openapi/v0.0.38", text_listing=True),
    "24.11": Dialect("24.11", structured=True, data_parser="data_parser/v0.0.42", filters_jobs=True),
    "26.05": Dialect("26.05", structured=True, data_parser="data_parser/v0.0.45", filters_jobs=True),
}

_VERSION = re.compile(r"^slurm(?:-wlm)?\s+(\d+)\.(\d+)\.(\d+)\S*\s*$")


def release_of(version_output: str) -> str:
    """``scontrol --version`` output (``slurm 24.11.5``) -> the release series (``24.11``)."""
    m = _VERSION.match(version_output.strip())
    if not m:
        raise SlurmError(f"cannot read the Slurm version from `scontrol --version`: {version_output.strip()[:80]!r}")
    return f"{int(m[1]):02d}.{int(m[2]):02d}"


def dialect_for(version_output: str) -> Dialect:
    """The dialect of the Slurm whose ``scontrol --version`` printed ``version_output``."""
    release = release_of(version_output)
    if release not in DIALECTS:
        raise UnsupportedSlurm(f"Slurm {version_output.strip().split()[-1]} ({release}) is not a release hops-slurm "
                               f"reads (supported: {', '.join(DIALECTS)})")
    return DIALECTS[release]


def data_parser_of(data: Mapping[str, Any]) -> str:
    """The data_parser a JSON answer names in ``meta``: ``meta.plugin.data_parser`` (23.02 and later) or
    ``meta.plugin.type`` (22.05: ``openapi/v0.0.38``)."""
    meta = data.get("meta")
    plugin = meta.get("plugin") if isinstance(meta, dict) else None
    if isinstance(plugin, dict):
        for key in ("data_parser", "type"):
            value = plugin.get(key)
            if isinstance(value, str) and value:
                return value
    raise UnsupportedSlurm("Slurm's JSON output names no data_parser in meta.plugin: cannot tell how to read it")
