"""Text from users made safe to print or log: the one escaping helper every output path uses.

Where it sits: at the edges. Job names, comments, user names, file paths and messages that carry them
reach the administrator's terminal (``hops-slurm queue``, ``report``, CLI errors) and the engine's log;
:func:`printable` turns every control character (C0, DEL, C1), line or paragraph separator and
bidirectional override into a visible escape, so no user text can start a fake line, move the cursor,
recolour a terminal or reorder what is shown. :class:`EscapingFormatter` applies it to every log record.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from hops_slurm.errors import HopsError

#: C0 controls, DEL, C1 controls, Unicode line/paragraph separators, bidi embeddings/overrides/isolates,
#: zero-width and BOM characters, lone surrogates (from undecodable bytes).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200b-\u200f\ufeff\ud800-\udfff]")


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    if c == 0x0A:
        return "\\n"
    if c == 0x09:
        return "\\t"
    if c == 0x0D:
        return "\\r"
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def printable(text: object, limit: int | None = None) -> str:
    """``text`` as one line with every unsafe character escaped (``\\n``, ``\\x1b``, ``\\u202e``);
    cut to ``limit`` characters (with ``...``) when given."""
    s = text if isinstance(text, str) else str(text)
    if limit is not None and len(s) > limit:
        s = s[:limit] + "..."
    return _UNSAFE.sub(_escape, s)


def printable_lines(text: object) -> str:
    """Like :func:`printable` but keeps the line breaks of a deliberately multi-line message."""
    return "\n".join(printable(line) for line in str(text).split("\n"))


class EscapingFormatter(logging.Formatter):
    """A log formatter whose message part is :func:`printable` (tracebacks, added by logging, stay as they are)."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        record.message = printable(record.message)
        return super().formatMessage(record)


def read_utf8(path: Path, what: str = "file", limit: int = 64 * 1024 * 1024) -> str:
    """A text file a user hands the CLI (a spec, a workload, a cluster): a regular file of at most
    ``limit`` bytes, in UTF-8; anything else is a :class:`HopsError` naming the path."""
    shown = printable(path)
    try:
        if not Path(path).is_file():
            raise HopsError(f"{what} {shown}: not a regular file" if Path(path).exists() else f"{what} {shown}: no such file")
        with open(path, "rb") as f:
            raw = f.read(limit + 1)
    except OSError as exc:
        raise HopsError(f"{what} {shown}: cannot read: {exc.strerror}") from None
    if len(raw) > limit:
        raise HopsError(f"{what} {shown}: larger than {limit} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HopsError(f"{what} {shown}: not UTF-8 text (byte {exc.start + 1})") from None


def id_list(ids: list[str], shown: int = 20) -> str:
    """Job ids for a log line, bounded: ``[1, 2, 3]``, or the first ``shown`` and how many more (a
    restart with 10,000 queued jobs would otherwise log all of them on one line)."""
    if len(ids) <= shown:
        return "[" + ", ".join(ids) + "]"
    return "[" + ", ".join(ids[:shown]) + f", ... {len(ids) - shown} more]"
