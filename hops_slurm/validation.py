"""Turning pydantic validation errors into messages that name every offending key path and its bound.

Where it sits: at the edges, wherever untrusted input is validated with pydantic (site configs,
what-if assumptions, the records users' probes and recorders write). :func:`format_validation_error`
gives one line per problem (configs list every bad key); :func:`one_line` gives the first problem on
one line, ``field: bound (got value)``, and how many more there are: never pydantic's own header
(``1 validation error for tagged-union[...]``), which names neither.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from hops_slurm.text import printable


def key_path(loc: tuple[object, ...]) -> str:
    """``('partitions', 0, 'name')`` -> ``partitions.0.name``; the model root is ``(top level)``."""
    return ".".join(str(p) for p in loc) or "(top level)"


def _shown(value: object, limit: int = 60) -> str:
    return printable(repr(value), limit)


def problem(err: Any) -> str:
    """One pydantic error as ``key.path: message (got value)``; the message names the bound that failed
    (``Input should be less than or equal to 1024``)."""
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        msg = "unknown key"
    elif err["type"] == "missing":
        msg = "required key is missing"
    got = err.get("input")
    shown = "" if err["type"] in ("missing",) or isinstance(got, dict) else f" (got {_shown(got)})"
    return f"{key_path(tuple(err['loc']))}: {msg}{shown}"


def format_validation_error(exc: ValidationError) -> str:
    """One line per problem: ``  key.path: message (got 'value')``."""
    return "\n".join(f"  {problem(err)}" for err in exc.errors(include_url=False))


def one_line(exc: ValidationError, limit: int = 300) -> str:
    """The first problem of ``exc`` on one line (``field: bound (got value)``) and how many more."""
    errors = exc.errors(include_url=False)
    if not errors:
        return "invalid"
    text = problem(errors[0])
    text = text if len(text) <= limit else text[:limit] + "..."
    return text + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else "")


def reason(exc: BaseException, limit: int = 300) -> str:
    """Any exception as one line: :func:`one_line` for a validation error, else its first line (or its type)."""
    if isinstance(exc, ValidationError):
        return one_line(exc, limit)
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    return first if len(first) <= limit else first[:limit] + "..."
