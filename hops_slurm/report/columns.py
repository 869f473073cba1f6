"""Slurm-style ``--format`` columns, shared by every table the CLI prints (report, whatif).

Where it sits: a command's field table (name -> a field with a ``name`` and a default ``width``) and the
user's ``--format`` text go in; :func:`parse_format` returns the columns (or one :class:`HopsError` line
naming the bad part), :func:`fit` pads or cuts one cell the way sacct does (``+`` marks a cut).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from hops_slurm.errors import HopsError
from hops_slurm.text import printable

MAX_WIDTH = 1000  # widest --format column (sacct's own widths are small; this only bounds memory)


class NamedField(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def width(self) -> int: ...


F = TypeVar("F", bound=NamedField)


@dataclass(frozen=True)
class Column(Generic[F]):
    field: F
    width: int  # > 0
    left: bool = False


def parse_format(spec: str, fields: Mapping[str, F]) -> list[Column[F]]:
    """Columns from ``Name[%[-]WIDTH],...`` (names case-insensitive, as sacct's --format); ``fields``
    is keyed by lower-case name."""
    columns: list[Column[F]] = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        name, _, width_text = part.partition("%")
        fld = fields.get(name.strip().lower())
        if fld is None:
            raise HopsError(f"unknown field {printable(name, 40)!r} in --format; fields: "
                            f"{', '.join(f.name for f in fields.values())}")
        width, left = fld.width, False
        if width_text:
            try:
                w = int(width_text)
            except ValueError:
                raise HopsError(f"bad width {printable(width_text, 40)!r} in --format field {printable(part, 60)}: "
                                f"use e.g. {fld.name}%12") from None
            if w == 0 or abs(w) > MAX_WIDTH:
                raise HopsError(f"width {w} in --format field {printable(part, 60)} is outside 1..{MAX_WIDTH}")
            width, left = abs(w), w < 0
        columns.append(Column(fld, width, left))
    if not columns:
        raise HopsError("--format names no fields")
    return columns


def fit(text: str, col: Column[F]) -> str:
    """One cell: printable, cut to the column's width with a trailing ``+``, padded right (or left)."""
    text = printable(text)
    if len(text) > col.width:
        text = text[: col.width - 1] + "+"
    return text.ljust(col.width) if col.left else text.rjust(col.width)
