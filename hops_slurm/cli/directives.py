"""``hops-slurm directives check job.sh``: print the canonical #HOPS form or the error."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hops_slurm.directives import parse_script
from hops_slurm.errors import HopsError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("directives", help="#HOPS directives in batch scripts")
    p.add_argument("action", choices=["check"])
    p.add_argument("scripts", type=Path, nargs="+", help="batch scripts ('-' for standard input)")
    p.add_argument("--comment", default=None, help="also parse this --comment value (hops:...)")
    p.add_argument("--json", action="store_true", help="one JSON object per script")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    failed = 0
    for path in args.scripts:
        text = sys.stdin.read() if str(path) == "-" else _read(path)
        name = "-" if str(path) == "-" else str(path)
        try:
            parsed = parse_script(text, comment=args.comment)
        except HopsError as exc:
            failed += 1
            if args.json:
                print(json.dumps({"script": name, "ok": False, "error": str(exc), "key": getattr(exc, "key", None)}))
            else:
                print(f"{name}: error: {exc}", file=sys.stderr)
            continue
        if args.json:
            print(json.dumps({"script": name, "ok": True, "hops": parsed is not None,
                              "canonical": parsed.canonical() if parsed else None,
                              "directives": parsed.model_dump(mode="json") if parsed else None}))
        else:
            print(f"{name}: {parsed.canonical() if parsed else '(no #HOPS directives: not a Hops job)'}")
    return 1 if failed else 0


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise HopsError(f"cannot read {path}: {exc.strerror}") from None
