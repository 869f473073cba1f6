"""The enactor's phases (:data:`hops_slurm.slurm.enact.ENACT_PHASES`): the list names exactly the phases
the enactor times, read from its source (what it hands to its timer, directly or as a journal kind)."""

from __future__ import annotations

import ast
import inspect

from hops_slurm.slurm import enact
from hops_slurm.slurm.enact import ENACT_PHASES

#: the enactor's methods whose first argument is the phase it times (a journal kind or a wait)
TIMING = {"_timed", "_action", "batched", "scripted", "_each"}


def timed_names() -> set[str]:
    """Every literal phase name the enactor's source hands to a timing method; ``_hold_jobs`` is the
    ``hold`` phase."""
    names = set()
    for node in ast.walk(ast.parse(inspect.getsource(enact))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "_hold_jobs":
                names.add("hold")
            elif node.func.attr in TIMING and node.args and isinstance(node.args[0], ast.Constant):
                names.add(node.args[0].value)
    return names


def test_the_phase_list_is_what_the_enactor_times() -> None:
    assert timed_names() == set(ENACT_PHASES)
    assert len(set(ENACT_PHASES)) == len(ENACT_PHASES)
