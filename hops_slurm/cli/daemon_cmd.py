"""``hops-slurm daemon [--config FILE] [--foreground]``: run the Hops engine (see hops_slurm.engine.daemon).

The config file is ``--config``, else ``$HOPS_CONFIG``, else /etc/hops-slurm/hops.toml
(:func:`hops_slurm.config_path.find_config`; the bundled sample is never taken silently). Without ``--foreground`` the daemon detaches (double fork, log to
``<state_dir>/engine.log``); systemd runs it with ``--foreground``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from hops_slurm import config_path
from hops_slurm.config import SiteConfig
from hops_slurm.text import EscapingFormatter


def add_config_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", type=Path, default=None,
                   help=f"site configuration (default ${config_path.CONFIG_ENV}, else {config_path.SYSTEM_CONFIG})")


def site_config(args: argparse.Namespace) -> SiteConfig:
    return config_path.site_config(args.config)


def info_logging(log_file: Path | None = None) -> None:
    root = logging.getLogger()
    if log_file is not None:
        handler = logging.FileHandler(log_file)
        handler.setFormatter(EscapingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.handlers = [handler]
    if root.level > logging.INFO:
        root.setLevel(logging.INFO)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("daemon", help="run the Hops engine: queue refresh, rounds, monitor, profiling",
                       description="Run the Hops engine: read Slurm's queue, profile new jobs, plan rounds and "
                                   "enact them; detaches unless --foreground.")
    add_config_arg(p)
    p.add_argument("--foreground", action="store_true", help="stay attached and log to stderr (systemd, tests)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from hops_slurm.engine.daemon import run_daemon
    from hops_slurm.engine.engine import Engine

    cfg = site_config(args)
    engine = Engine(cfg)
    if not args.foreground:
        engine.lock.acquire()  # creates state_dir, or checks it is root's own  # fail here, in the terminal, if another engine runs
        engine.lock.release()
        if os.fork():
            return 0
        os.setsid()
        if os.fork():
            os._exit(0)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        info_logging(cfg.paths.state_dir / "engine.log")
    else:
        info_logging()
    roots = [str(r) for r in (cfg.paths.state_dir, *cfg.paths.allowed_roots)]
    logging.getLogger(__name__).info("the engine writes under %s ([paths] state_dir, allowed_roots)", ", ".join(roots))
    sys.stdout.flush()
    return run_daemon(engine)
