"""``hops-slurm config check|show [FILE] [--sample]``: validate a site configuration, naming every bad key
(``check`` also says where the engine writes: the state directory and ``paths.allowed_roots``), or show it
with every default filled in.

Without FILE the file checked is the one the daemon uses (:func:`hops_slurm.config_path.find_config`:
``$HOPS_CONFIG``, else /etc/hops-slurm/hops.toml), named in the output with how it was found; a missing
one is an error naming it. The sample shipped with the package is checked only with ``--sample``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hops_slurm.config_path import CONFIG_ENV, SYSTEM_CONFIG, find_config, load_found
from hops_slurm.errors import HopsError
from hops_slurm.text import printable


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "config", help="check the site configuration the daemon uses (hops.toml) or show it with its defaults",
        description="Validate a site configuration (hops.toml): by default the one the daemon uses "
                    f"(${CONFIG_ENV}, else {SYSTEM_CONFIG}), named in the output. `check` says OK or names every "
                    "bad key with its path and exits 1 (a missing file: exits 1 naming it); `show` validates the same way, then prints the whole "
                    "configuration as JSON, every default filled in (what the daemon will run with).")
    p.add_argument("action", choices=["check", "show"],
                   help="check: validate, print `FILE: OK` or the problems; show: validate, then print the "
                        "effective configuration as JSON")
    p.add_argument("file", type=Path, nargs="?", default=None,
                   help=f"the configuration (default ${CONFIG_ENV}, else {SYSTEM_CONFIG})")
    p.add_argument("--sample", action="store_true", help="the sample configuration shipped with hops-slurm")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.sample and args.file is not None:
        raise HopsError("config: give a FILE or --sample, not both")
    found = find_config(args.file, sample=args.sample)
    cfg = load_found(found)  # raises ConfigError naming the file and every key path
    if args.action == "check":
        roots = [cfg.paths.state_dir, *cfg.paths.allowed_roots]
        print(printable(f"{found.path}: OK ({found.source}); the engine writes under {', '.join(str(r) for r in roots)}"))
    else:
        print(json.dumps(cfg.model_dump(mode="json", by_alias=True), indent=1))
    return 0
