"""``hops-slurm site VERB``: what an administrator does to take Hops into a Slurm site, one verb per module.

The group only gathers its verbs: every module ``hops_slurm/cli/site_<verb>.py`` that defines
``register_verb(verbs)`` adds one (``site_files``: ``hops-slurm site files DIR``), the way
:func:`hops_slurm.cli.build_parser` gathers the top-level commands. A verb sets ``func(args) -> int``.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
from pathlib import Path

VERB_PREFIX = "site_"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("site", help="take Hops into a Slurm site: its files, checks, leaving",
                       description="Take Hops into a Slurm site, one verb per step; "
                                   "`hops-slurm site VERB --help` says what each does.")
    verbs = p.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True
    package, _, own = __name__.rpartition(".")
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda m: m.name):
        if not info.name.startswith(VERB_PREFIX) or info.name == own:
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        register_verb = getattr(module, "register_verb", None)
        if register_verb is not None:
            register_verb(verbs)
    verbs.help = "; ".join(f"{a.dest}: {a.help}" for a in verbs._choices_actions)  # each verb's own help line
