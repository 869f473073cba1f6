"""Command-line entry point ``hops-slurm``.

Every module in this package that defines ``register(subparsers)`` adds one subcommand; the
subcommand sets ``func(args) -> int`` as its handler. Errors derived from ``HopsError`` are printed
as ``hops-slurm: error: ...`` with exit status 1, never as a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys
from collections.abc import Sequence

from hops_slurm import __version__
from hops_slurm.errors import HopsError

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


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.WARNING - 10 * min(args.verbose, 2)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return int(args.func(args) or 0)
    except HopsError as exc:
        print(f"hops-slurm: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
