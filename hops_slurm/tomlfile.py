"""TOML text from a file someone hands hops-slurm, parsed with bounded nesting.

Where it sits: at the edges, in front of :mod:`tomllib`, for every TOML file the CLI or the engine reads
(the site config, whatif's ``--assumptions`` and ``--cluster``, simulator clusters, minicluster specs,
the demo's files). :mod:`tomllib` recurses once per nested array or inline table (100,000 ``[`` end in
``RecursionError``) and builds a dotted key's prefixes one by one (a key of 100,000 parts takes minutes
and gigabytes). :func:`loads` first scans the text once, linearly, and refuses more than
:data:`MAX_DEPTH` nested arrays and inline tables, or a key (dotted, or a table header) of more than
:data:`MAX_DEPTH` parts, with :class:`TooDeep`: a :class:`tomllib.TOMLDecodeError`, so every caller's
one-line "not valid TOML" message names it, with its line.
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

#: the most nested arrays / inline tables, and the most parts of one key; no hops-slurm file needs 4
MAX_DEPTH = 32

_SPECIAL = re.compile(r"[\"'#\[\]{}=,.\n]")


class TooDeep(tomllib.TOMLDecodeError):
    """The TOML text nests deeper than :data:`MAX_DEPTH` (see the module docstring)."""


def _string_end(text: str, i: int) -> int:
    """The index after the string that starts at ``text[i]`` (a quote); len(text) if it never ends."""
    quote = text[i]
    delim = quote * 3 if text.startswith(quote * 3, i) else quote
    j = i + len(delim)
    while True:
        k = text.find(delim, j)
        if k < 0:
            return len(text)
        if quote == "'":
            return k + len(delim)
        slashes = 0
        while k - 1 - slashes >= j and text[k - 1 - slashes] == "\\":
            slashes += 1
        if slashes % 2 == 0:
            return k + len(delim)
        j = k + 1


def check_nesting(text: str, max_depth: int = MAX_DEPTH) -> None:
    """Raise :class:`TooDeep` when ``text`` nests arrays / inline tables, or dots one key, deeper than
    ``max_depth``. One pass; strings and comments are skipped; malformed text is left to tomllib."""
    stack: list[str] = []  # "a" array, "t" inline table
    key_mode, parts, line, i, n = True, 1, 1, 0, len(text)

    def deep(what: str) -> TooDeep:
        return TooDeep(f"{what} at line {line}: refused")

    while i < n:
        m = _SPECIAL.search(text, i)
        if m is None:
            break
        i, c = m.start(), m.group()
        if c in "\"'":
            end = _string_end(text, i)
            line += text.count("\n", i, end)
            i = end
            continue
        if c == "#":
            nl = text.find("\n", i)
            i = n if nl < 0 else nl
            continue
        i += 1
        if c == "\n":
            line += 1
            if not stack:
                key_mode, parts = True, 1
        elif key_mode:
            if c == ".":
                parts += 1
                if parts > max_depth:
                    raise deep(f"a key of more than {max_depth} dotted parts")
            elif c == "=":
                key_mode, parts = False, 1
            elif c in "[]":
                pass  # a table header's brackets; its dots count as a key's
            elif c == "}" and stack:  # an empty inline table `{}`
                stack.pop()
                key_mode = False
        elif c in "[{":
            stack.append("a" if c == "[" else "t")
            if len(stack) > max_depth:
                raise deep(f"arrays and inline tables nested more than {max_depth} deep")
            if c == "{":
                key_mode, parts = True, 1
        elif c in "]}":
            if stack:
                stack.pop()
        elif c == "," and stack and stack[-1] == "t":
            key_mode, parts = True, 1


def loads(text: str) -> dict[str, Any]:
    """:func:`tomllib.loads` after :func:`check_nesting`; raises :class:`tomllib.TOMLDecodeError`."""
    check_nesting(text)
    try:
        return tomllib.loads(text)
    except RecursionError:  # not reached after the check; kept so that no input can raise it
        raise TooDeep(f"nested deeper than {MAX_DEPTH} levels: refused") from None


__all__ = ["MAX_DEPTH", "TooDeep", "check_nesting", "loads"]
