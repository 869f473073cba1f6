"""Turning pydantic validation errors into messages that name every offending key path."""

from __future__ import annotations

from pydantic import ValidationError


def key_path(loc: tuple[object, ...]) -> str:
    """``('partitions', 0, 'name')`` -> ``partitions.0.name``; the model root is ``(top level)``."""
    return ".".join(str(p) for p in loc) or "(top level)"


def format_validation_error(exc: ValidationError) -> str:
    """One line per problem: ``  key.path: message (got 'value')``."""
    lines = []
    for err in exc.errors(include_url=False):
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        elif err["type"] == "missing":
            msg = "required key is missing"
        got = err.get("input")
        shown = "" if err["type"] in ("missing",) or isinstance(got, dict) else f" (got {got!r})"
        lines.append(f"  {key_path(err['loc'])}: {msg}{shown}")
    return "\n".join(lines)
