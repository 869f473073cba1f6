"""Command-line entry point ``hops-slurm``.

Every module in this package that defines ``register(subparsers)`` adds one subcommand; the
subcommand sets ``func(args) -> int`` as its handler. Errors derived from ``HopsError`` are printed
as ``hops-slurm: error: ...`` with exit status 1, never as a traceback; so are the errors bad input
raises from below (a file that cannot be read or decoded, a broken SQLite file, a value out of range),
and anything else is one ``internal error`` line (``-vv`` shows the traceback). Everything printed or
logged goes through :func:`hops_slurm.text.printable`, so user text cannot forge lines or escapes.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sqlite3
import sys
import traceback
from collections.abc import Sequence

from pydantic import ValidationError

from hops_slurm import __version__
from hops_slurm.errors import HopsError
from hops_slurm.text import EscapingFormatter, printable, printable_lines
from hops_slurm.validation import one_line

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

log = logging.getLogger("hops_slurm")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hops-slurm",
        description="Hops GPU scheduling for Slurm: heterogeneity-aware, latency-ratio fair.",
    )
    parser.add_argument("--version", action="version", version=f"hops-slurm {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv: debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
    return parser


def describe(exc: BaseException) -> str:
    """One line naming what was wrong with the input behind ``exc`` (an error raised below the CLI)."""
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror or exc}"
    if isinstance(exc, sqlite3.Error):
        return f"SQLite: {exc} (is the file a complete hops-slurm database?)"
    if isinstance(exc, UnicodeDecodeError):
        return f"input is not valid {exc.encoding} text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
    if isinstance(exc, ValidationError):
        return f"invalid record: {one_line(exc)}"
    return str(exc) or type(exc).__name__


def _fail(message: str) -> int:
    print(f"hops-slurm: error: {message}", file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.WARNING - 10 * min(args.verbose, 2)
    handler = logging.StreamHandler()
    handler.setFormatter(EscapingFormatter(LOG_FORMAT))
    logging.basicConfig(level=level, handlers=[handler])
    try:
        return int(args.func(args) or 0)
    except HopsError as exc:
        return _fail(printable_lines(exc))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 141  # e.g. `hops-slurm report | head`: the reader left; nothing to report
    except (OSError, sqlite3.Error, UnicodeError, ValidationError, ValueError, OverflowError, MemoryError) as exc:
        if args.verbose >= 2:
            traceback.print_exc()
        return _fail(printable(describe(exc), 500))
    except Exception as exc:  # noqa: BLE001 - a bug: one line, the traceback only with -vv
        if args.verbose >= 2:
            traceback.print_exc()
        return _fail(printable(f"internal error: {type(exc).__name__}: {exc} (run with -vv for the traceback)", 500))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
