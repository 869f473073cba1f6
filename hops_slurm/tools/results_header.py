"""The first line of every results document: who wrote it, the command that rewrites it, the commit, the date.

Where it sits: tooling, beside :mod:`hops_slurm.tools.bench`. Every generator of a document under
``docs/results/`` (the benchmarks, the demo's pages) writes its text through :func:`write`, which puts
one HTML comment (invisible when the Markdown renders) on the first line::

    <!-- results: generator=hops_slurm.tools.bench.store_flood:run command="hops-slurm bench store-flood" commit=2b5165a date=2026-11-28 -->

A document written by hand about a past measurement says so with ``historical`` in place of the
generator, keeping the command and the commit it was measured with::

    <!-- results: historical command="hops-slurm bench load" commit=8a4d4a6 date=2026-11-20 -->

The header may end with where the run happened (``ran_on``), which :func:`write` fills in from the
process's own environment, so every generator writes it without asking::

    <!-- results: generator=... command="hops-slurm bench solver" commit=2b5165a date=2026-11-28 ran_on="local, 2 CPUs" -->
    ... ran_on="slurm job array 4711 task 3 on cluster hops, 4 CPUs" -->

``local`` is a process outside any Slurm job; inside one (a task of ``hops-slurm bench --on-slurm``'s job
array, or any batch job) it names the job, the array task and the cluster. The CPUs are those the process
may run on (its affinity, within the job's allocation on that node). A document assembled from parts that
ran as the tasks of one array (``hops-slurm bench paper-tables --on-slurm``) says so for the whole:
``ran_on="slurm job array 4711 on cluster hops, 7 tasks"`` (:func:`running_on`), and each part says where
it ran in its own text. Documents written before the field existed carry none and stay valid.

A generator module exposes the command it writes without running anything: ``command(env)`` returns it
for the environment ``env`` (the ``HOPS_BENCH_*`` variables it reads; :func:`bench_command` builds the
usual one). ``tests/test_results_documents.py`` reads every document's header back with :func:`parse`
and checks that the generator still exists and still writes that command, so a renamed benchmark or a
dropped variable fails a test instead of leaving a document that nobody can regenerate.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import os
import re
import shlex
import subprocess
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

#: the checkout this module lies in (when it is one: an installed wheel has no .git)
ROOT = Path(__file__).resolve().parents[2]
_SHA = r"[0-9a-f]{7,40}(?:\+dirty)?|unknown"
#: where a run happened: this machine outside Slurm, or a Slurm job (an array's task) on a named cluster
RAN_ON = re.compile(r"local, [1-9]\d{0,5} CPUs?|slurm job (?:array )?\d{1,12}(?: task \d{1,9})? "
                    r"on cluster [\w.-]{1,64}, (?:[1-9]\d{0,5} CPUs?|[1-9]\d{0,6} tasks?)")
_LINE = re.compile(r'<!-- results: (?:generator=(?P<generator>[\w.]+:\w+)|(?P<historical>historical)) '
                   r'command="(?P<command>(?:[^"\\]|\\.)+)" commit=(?P<commit>' + _SHA + r') '
                   r'date=(?P<date>\d{4}-\d{2}-\d{2})(?: ran_on="(?P<ran_on>[^"]{1,200})")? -->')
_ENV = re.compile(r"[A-Z_][A-Z0-9_]*=")
MAX_COMMAND = 2000


@dataclass(frozen=True)
class Header:
    """One document's header line, read or to be written. ``generator`` is None for a historical one."""

    generator: str | None  # "dotted.module:function"
    command: str  # the exact shell command that (re)made the document
    commit: str  # short sha, "+dirty" when the tree had changes outside docs/; "unknown" outside a checkout
    date: str  # YYYY-MM-DD (UTC)
    ran_on: str | None = None  # where it ran (:func:`ran_on`); None in documents written before the field

    @property
    def historical(self) -> bool:
        return self.generator is None

    def line(self) -> str:
        """The header as the document's first line (no newline)."""
        if not self.command or "\n" in self.command or len(self.command) > MAX_COMMAND:
            raise ValueError("a results header's command is one non-empty line")
        quoted = self.command.replace("\\", "\\\\").replace('"', '\\"')
        who = "historical" if self.generator is None else f"generator={self.generator}"
        where = "" if self.ran_on is None else f' ran_on="{self.ran_on}"'
        text = f'<!-- results: {who} command="{quoted}" commit={self.commit} date={self.date}{where} -->'
        if parse(text) != self:
            raise ValueError(f"not a valid results header: {text[:200]}")
        return text


def parse(line: str) -> Header | None:
    """The header of a document's first line, or None when the line is not one."""
    m = _LINE.fullmatch(line.strip())
    if m is None or (m["ran_on"] is not None and RAN_ON.fullmatch(m["ran_on"]) is None):
        return None
    command = re.sub(r"\\(.)", r"\1", m["command"])
    return Header(None if m["historical"] else m["generator"], command, m["commit"], m["date"], m["ran_on"])


def read(path: Path) -> Header | None:
    """The header of the document at ``path`` (its first line), or None."""
    with path.open(errors="replace") as f:
        return parse(f.readline())


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


@functools.cache
def current_commit() -> str:
    """HEAD's short sha, with ``+dirty`` when tracked files outside docs/ differ from it (the documents a run
    rewrites do not change what made them); ``unknown`` outside a git checkout. Read once per process, so
    that a run writing several documents gives them all the same commit."""
    head = _git("rev-parse", "--short", "HEAD")
    if not head or not (ROOT / ".git").exists():
        return "unknown"
    changes = _git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)docs")
    return head.strip() + ("+dirty" if changes is None or changes.strip() else "")


def today() -> str:
    return dt.datetime.now(dt.UTC).date().isoformat()


def _cpus(env: Mapping[str, str]) -> int:
    """The CPUs this process may run on: its affinity, within a Slurm job's allocation on this node."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    allocated = env.get("SLURM_CPUS_ON_NODE", "")
    if allocated.isdigit() and 0 < int(allocated) < cpus:
        cpus = int(allocated)
    return max(1, min(cpus, 999_999))


def ran_on(env: Mapping[str, str] | None = None) -> str:
    """Where this process runs, as a header's ``ran_on`` (module docstring): ``local, N CPUs`` outside Slurm,
    ``slurm job [array] ID [task K] on cluster NAME, N CPUs`` inside a job (``env``: the process's own)."""
    env = os.environ if env is None else env
    cpus = _cpus(env)
    unit = "CPU" if cpus == 1 else "CPUs"
    array, task, job = (env.get(k, "") for k in ("SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_JOB_ID"))
    if array.isdigit() and task.isdigit() and len(array) <= 12 and len(task) <= 9:
        what = f"slurm job array {array} task {task}"
    elif job.isdigit() and len(job) <= 12:
        what = f"slurm job {job}"
    else:
        return f"local, {cpus} {unit}"
    cluster = re.sub(r"[^\w.-]", "_", env.get("SLURM_CLUSTER_NAME", ""))[:64] or "unnamed"
    return f"{what} on cluster {cluster}, {cpus} {unit}"


_where: list[str] = []


@contextlib.contextmanager
def running_on(where: str) -> Iterator[None]:
    """Headers written inside this block say ``where`` (e.g. a document assembled here from parts that ran as
    the tasks of a job array) instead of where this process runs."""
    if RAN_ON.fullmatch(where) is None:
        raise ValueError(f"not a place a run can say it ran: {where[:100]!r}")
    _where.append(where)
    try:
        yield
    finally:
        _where.pop()


def header(generator: str, command: str) -> Header:
    """The header a generator writes now, here (or where :func:`running_on` says)."""
    return Header(generator, command, current_commit(), today(), _where[-1] if _where else ran_on())


def write(path: Path, body: str, *, generator: str, command: str) -> Path:
    """Write ``body`` to ``path`` under the header of ``generator`` and ``command``; returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header(generator, command).line() + "\n" + body.lstrip("\n"), encoding="utf-8")
    return path


def body(text: str) -> str:
    """A document's text without its header line (what a generator wrote, e.g. a part assembled into a page)."""
    first, sep, rest = text.partition("\n")
    return rest if parse(first) is not None else text


def bench_command(name: str, env_vars: Iterable[str], env: Mapping[str, str]) -> str:
    """``hops-slurm bench NAME`` preceded by those of ``env_vars`` that ``env`` sets, in ``env_vars``' order:
    the command that reruns a benchmark as it ran."""
    words = [f"{var}={shlex.quote(env[var])}" for var in env_vars if var in env]
    return " ".join([*words, "hops-slurm", "bench", name])


def command_env(command: str) -> dict[str, str]:
    """The ``NAME=value`` assignments that start a command (the environment it runs a generator in)."""
    env: dict[str, str] = {}
    for word in shlex.split(command):
        if not _ENV.match(word):
            break
        name, _, value = word.partition("=")
        env[name] = value
    return env
