"""``hops-slurm directives check job.sh``: the submit hook's verdict on a script, before it is submitted.

Scripts are read as bytes, exactly as the submit hook sees them (docs/directives-grammar.md); the
script's ``#SBATCH`` header is read as sbatch reads it (:mod:`hops_slurm.sbatch_header`: ``-p``,
``--gres``, ``--gpus``, ``--reservation``, ``--comment`` ...), and the hook's rules applied to what sbatch
would hand slurmctld (:mod:`hops_slurm.submit_policy`, the twin of ``hooks/hops_submit.lua``), with the
Hops partitions of the site configuration (``[slurm] partitions``) or ``--partitions``.
"""

from __future__ import annotations

import argparse
import json
import stat
import sys
from pathlib import Path

from hops_slurm.directives import parse_script
from hops_slurm.config_path import find_config, load_found
from hops_slurm.sbatch_header import read_header, request_fields
from hops_slurm.submit_policy import Request, Verdict, verdict
from hops_slurm.errors import HopsError
from hops_slurm.text import printable

MAX_READ = 64 * 1024 * 1024  # a batch script larger than this is not one (Slurm's own cap is 4 MB)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("directives", help="#HOPS directives in batch scripts",
                       description="Check the #HOPS lines of batch scripts as the submit hook would: print "
                                   "their canonical form, or the error naming the key.")
    p.add_argument("action", choices=["check"], help="check: parse each script, print its canonical form or its error")
    p.add_argument("scripts", type=Path, nargs="+", help="batch scripts ('-' for standard input)")
    p.add_argument("--comment", default=None, help="also parse this --comment value (hops:...), as sbatch --comment gives it")
    p.add_argument("--partitions", default=None,
                   help="the Hops partitions, comma-separated, the first the default (default: [slurm] partitions of "
                        "the site configuration)")
    p.add_argument("--config", type=Path, default=None,
                   help="site configuration for the Hops partitions (default $HOPS_CONFIG, else the system one)")
    p.add_argument("--json", action="store_true", help="one JSON object per script")
    p.set_defaults(func=_run)


def _partitions(args: argparse.Namespace) -> tuple[str, ...]:
    """``--partitions``, else the site configuration's (the daemon's); none found and none named: the sample's,
    said on standard error (a user's login node may not have the site's file)."""
    if args.partitions is not None:
        names = tuple(p for p in args.partitions.split(",") if p)
        if not names:
            raise HopsError("--partitions: give at least one partition name")
        return names
    found = find_config(args.config)
    if args.config is None and not found.path.exists():
        sample = load_found(find_config(sample=True)).slurm.hops_partitions
        print(f"note: no site configuration at {printable(found.describe())}: Hops partitions taken as "
              f"{','.join(sample)} (give --partitions or --config)", file=sys.stderr)
        return tuple(sample)
    return tuple(load_found(found).slurm.hops_partitions)


def _run(args: argparse.Namespace) -> int:
    failed = 0
    comment = None if args.comment is None else args.comment.encode("utf-8", "surrogateescape")
    try:
        partitions = _partitions(args)
    except HopsError as exc:
        print(f"error: {printable(exc)}", file=sys.stderr)
        return 2
    for path in args.scripts:
        name = "-" if str(path) == "-" else str(path)
        shown = printable(name)
        try:
            text = sys.stdin.buffer.read(MAX_READ + 1) if name == "-" else _read(path)
            if len(text) > MAX_READ:
                raise HopsError(f"{shown}: larger than {MAX_READ} bytes: not a batch script")
            v = check(text, partitions, comment)
        except HopsError as exc:
            failed += 1
            _error(args, shown, str(exc), getattr(exc, "key", None))
            continue
        if v.kind == "ERR":
            failed += 1
            _error(args, shown, v.message, v.key or None)
            continue
        parsed = parse_script(text, comment if comment is not None else request_comment(text)) if v.kind == "OK" else None
        if args.json:
            print(json.dumps({"script": shown, "ok": True, "hops": v.kind == "OK",
                              "canonical": v.canonical or None, "partition": ",".join(v.partitions) or None,
                              "note": v.note or v.message or None,
                              "directives": parsed.model_dump(mode="json") if parsed else None}))
        elif v.kind == "OK":
            print(f"{shown}: {v.canonical}")
            if v.note:
                print(f"{shown}: note: {v.note}", file=sys.stderr)
        elif v.message:
            print(f"{shown}: (#HOPS lines, but not a Hops job: {printable(v.message)}; Slurm schedules it as it is)")
        else:
            print(f"{shown}: (no #HOPS directives: not a Hops job)")
    return 1 if failed else 0


def request_comment(script: bytes) -> bytes | None:
    c = request_fields(read_header(script)).get("comment")
    return c if isinstance(c, bytes) else None


def check(script: bytes, partitions: tuple[str, ...], comment: bytes | None = None) -> Verdict:
    """The hook's verdict on ``script`` submitted by a user with plain ``sbatch`` (``comment``: its --comment)."""
    fields = request_fields(read_header(script))
    if comment is not None:
        fields["comment"] = comment
    return verdict(Request(script=script, **fields), partitions)  # type: ignore[arg-type]


def _error(args: argparse.Namespace, shown: str, message: str, key: str | None) -> None:
    if args.json:
        print(json.dumps({"script": shown, "ok": False, "error": message, "key": key}))
    else:
        print(f"{shown}: error: {printable(message)}", file=sys.stderr)


def _read(path: Path) -> bytes:
    """A regular file's first bytes: a directory, FIFO or device is refused before it is opened."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            raise HopsError(f"cannot read {printable(path)}: not a regular file")
        with path.open("rb") as f:
            return f.read(MAX_READ + 1)
    except OSError as exc:
        raise HopsError(f"cannot read {printable(path)}: {exc.strerror}") from None
