"""``hops-slurm config check|show [FILE]``: validate a site configuration, naming every bad key (``check``
also says where the engine writes: the state directory and ``paths.allowed_roots``), or show it with every
default filled in."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hops_slurm.config import default_config_path, load_config
from hops_slurm.text import printable


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "config", help="check a site configuration (etc/hops.toml) or show it with its defaults",
        description="Validate a site configuration (hops.toml). `check` says OK or names every bad key with its "
                    "path and exits 1; `show` validates the same way, then prints the whole configuration as JSON, "
                    "every default filled in (what the daemon will run with).")
    p.add_argument("action", choices=["check", "show"],
                   help="check: validate, print `FILE: OK` or the problems; show: validate, then print the "
                        "effective configuration as JSON")
    p.add_argument("file", type=Path, nargs="?", default=None, help=f"the configuration (default {default_config_path()})")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    path = args.file or default_config_path()
    cfg = load_config(path)  # raises ConfigError naming every key path
    if args.action == "check":
        roots = [cfg.paths.state_dir, *cfg.paths.allowed_roots]
        print(printable(f"{path}: OK; the engine writes under {', '.join(str(r) for r in roots)}"))
    else:
        print(json.dumps(cfg.model_dump(mode="json", by_alias=True), indent=1))
    return 0
