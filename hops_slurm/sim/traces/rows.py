"""Bounded CSV reading for the trace importers: a foreign file -> rows with their line numbers.

Data flow: a path a user hands ``hops-slurm simulate`` -> :func:`read_rows` (a regular UTF-8 file of
bounded size, a header naming the required columns, at most ``max_rows`` rows, fields of bounded length)
-> ``(line number, {column: value})`` pairs for :mod:`.sia` and :mod:`.alibaba`. A bad row becomes one
line naming the file, the row and the problem (:class:`RowErrors`); no input raises anything but a
:class:`hops_slurm.errors.HopsError`.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from hops_slurm.errors import HopsError
from hops_slurm.text import printable, read_utf8

#: the most bytes a trace file may have (Alibaba's largest pod list is under 1 MiB, Sia's under 100 KiB)
MAX_BYTES = 64 * 1024 * 1024
#: the most characters one field may have
MAX_FIELD = 4096
#: the most bad rows named one by one in an error (then how many more)
MAX_SHOWN = 20


@dataclass
class Imported:
    """What an importer made, and what it had to assume: shown by the command and written in docs."""

    #: one line each: an assumption the import made, or rows it left out and why
    notes: list[str] = field(default_factory=list)


class RowErrors:
    """Bad rows of one file: collected, then raised as one :class:`HopsError` (one line per row)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines: list[tuple[int, str]] = []

    def add(self, lineno: int, problem: str) -> None:
        self.lines.append((lineno, f"{printable(self.path)}:{lineno}: {printable(problem, 300)}"))

    def raise_if_any(self) -> None:
        if not self.lines:
            return
        shown = [text for _n, text in sorted(self.lines)[:MAX_SHOWN]]
        more = len(self.lines) - len(shown)
        tail = [f"... and {more} more bad rows"] if more else []
        raise HopsError("invalid trace file:\n  " + "\n  ".join(shown + tail))


def read_rows(path: Path, what: str, required: Iterable[str], *, max_rows: int, limit: int = MAX_BYTES,
              errors: RowErrors | None = None) -> list[tuple[int, dict[str, str]]]:
    """Rows of the CSV file ``path`` as ``(line number, {column: stripped value})``; empty values are
    left out of the dict. The header must name every column of ``required``; other columns are kept
    (the importer decides); a row with more fields than the header is an error: added to ``errors``
    when given (the importer raises them with its own), else raised at once."""
    text = read_utf8(path, what, limit)
    if "\x00" in text:
        raise HopsError(f"{what} {printable(path)}: contains NUL bytes; not a CSV file")
    reader = csv.reader(io.StringIO(text, newline=""))
    raise_here = errors is None
    errors = errors or RowErrors(path)
    try:
        header = next(reader, None)
    except csv.Error as exc:
        raise HopsError(f"{printable(path)}:1: not CSV: {exc}") from None
    if header is None:
        raise HopsError(f"{what} {printable(path)}: empty file")
    header = [h.strip() for h in header]
    missing = [c for c in required if c not in header]
    if missing:
        raise HopsError(f"{printable(path)}:1: header lacks column(s) {', '.join(missing)}; it has "
                        f"{printable(', '.join(header), 300)}")
    rows: list[tuple[int, dict[str, str]]] = []
    while True:
        lineno = reader.line_num + 1
        try:
            fields = next(reader, None)
        except csv.Error as exc:
            errors.add(lineno, f"not CSV: {exc}")
            break
        if fields is None:
            break
        if not any(f.strip() for f in fields):
            continue
        if len(rows) >= max_rows:
            raise HopsError(f"{what} {printable(path)}: more than {max_rows} rows")
        if len(fields) > len(header):
            errors.add(lineno, f"{len(fields)} fields, the header has {len(header)}")
            continue
        if any(len(f) > MAX_FIELD for f in fields):
            errors.add(lineno, f"a field longer than {MAX_FIELD} characters")
            continue
        rows.append((lineno, {k: v.strip() for k, v in zip(header, fields) if v.strip()}))
    if raise_here:
        errors.raise_if_any()
    return rows


def number(row: dict[str, str], key: str, *, low: float = 0.0, high: float = 1e12, integer: bool = False) -> float:
    """Column ``key`` of ``row`` as a finite number in [low, high] (an integer when asked); ValueError
    naming the column otherwise."""
    if key not in row:
        raise ValueError(f"missing {key!r}")
    text = row[key]
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{key} must be a number, got {printable(text, 40)!r}") from None
    if not low <= value <= high:  # also refuses nan and inf
        raise ValueError(f"{key} must be in [{low:g}, {high:g}], got {printable(text, 40)!r}")
    if integer and value != int(value):
        raise ValueError(f"{key} must be a whole number, got {printable(text, 40)!r}")
    return value
