"""``hops-slurm site VERB``: the administrator's commands for the site Hops runs in.

The group only; each verb is a module ``site_<verb>_cmd.py`` beside this one that defines
``add_to(verbs)`` (``check``: :mod:`hops_slurm.cli.site_check_cmd`; ``leave``:
:mod:`hops_slurm.cli.site_leave_cmd`), found here as the top-level commands are found by
:func:`hops_slurm.cli.build_parser`.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil

import hops_slurm.cli as cli_package


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("site", help="the site Hops runs in: what it needs from Slurm, leaving it",
                       description="The administrator's commands for the site Hops runs in.")
    verbs = p.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True
    for info in sorted(pkgutil.iter_modules(cli_package.__path__), key=lambda m: m.name):
        if info.name.startswith("site_") and info.name.endswith("_cmd"):
            module = importlib.import_module(f"{cli_package.__name__}.{info.name}")
            add_to = getattr(module, "add_to", None)
            if add_to is not None:
                add_to(verbs)
    verbs.help = "; ".join(f"{a.dest}: {a.help}" for a in verbs._choices_actions)
