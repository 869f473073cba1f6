"""``hops-slurm directives check job.sh``: print the canonical #HOPS form or the error.

Scripts are read as bytes, exactly as the submit hook sees them (docs/directives-grammar.md).
"""

from __future__ import annotations

import argparse
import json
import stat
import sys
from pathlib import Path

from hops_slurm.directives import parse_script
from hops_slurm.errors import HopsError
from hops_slurm.text import printable

MAX_READ = 64 * 1024 * 1024  # a batch script larger than this is not one (Slurm's own cap is 4 MB)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("directives", help="#HOPS directives in batch scripts",
                       description="Check the #HOPS lines of batch scripts as the submit hook would: print "
                                   "their canonical form, or the error naming the key.")
    p.add_argument("action", choices=["check"], help="check: parse each script, print its canonical form or its error")
    p.add_argument("scripts", type=Path, nargs="+", help="batch scripts ('-' for standard input)")
    p.add_argument("--comment", default=None, help="also parse this --comment value (hops:...)")
    p.add_argument("--json", action="store_true", help="one JSON object per script")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    failed = 0
    comment = None if args.comment is None else args.comment.encode("utf-8", "surrogateescape")
    for path in args.scripts:
        name = "-" if str(path) == "-" else str(path)
        shown = printable(name)
        try:
            text = sys.stdin.buffer.read(MAX_READ + 1) if name == "-" else _read(path)
            if len(text) > MAX_READ:
                raise HopsError(f"{shown}: larger than {MAX_READ} bytes: not a batch script")
            parsed = parse_script(text, comment=comment)
        except HopsError as exc:
            failed += 1
            if args.json:
                print(json.dumps({"script": shown, "ok": False, "error": str(exc), "key": getattr(exc, "key", None)}))
            else:
                print(f"{shown}: error: {printable(exc)}", file=sys.stderr)
            continue
        if args.json:
            print(json.dumps({"script": shown, "ok": True, "hops": parsed is not None,
                              "canonical": parsed.canonical() if parsed else None,
                              "directives": parsed.model_dump(mode="json") if parsed else None}))
        else:
            print(f"{shown}: {parsed.canonical() if parsed else '(no #HOPS directives: not a Hops job)'}")
    return 1 if failed else 0


def _read(path: Path) -> bytes:
    """A regular file's first bytes: a directory, FIFO or device is refused before it is opened."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            raise HopsError(f"cannot read {printable(path)}: not a regular file")
        with path.open("rb") as f:
            return f.read(MAX_READ + 1)
    except OSError as exc:
        raise HopsError(f"cannot read {printable(path)}: {exc.strerror}") from None
