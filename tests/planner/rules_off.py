"""The planner's parameters before the JCT combination became the default, for tests of one rule at a time.

Since issue 37 the defaults (:class:`planner.params.PlannerParams`) turn on fourteen settings together
(docs/results/requeues.md, "The candidate default, assembled"). A test of one rule builds its planner from
:func:`rules_off`: the earlier defaults (the restart and preemption prices of "Moves that pay", every later rule
off), with only the settings it names changed, so what it asserts follows from that rule alone.
"""

from __future__ import annotations

from typing import Any

from planner.params import PlannerParams

#: the settings the JCT combination changed, at their values before it
EARLIER: dict[str, Any] = {
    "restart_penalty": 0.4, "preempt_penalty": 1.5, "stretch_weights": False, "remaining_weight": 0.0,
    "head_reservation": False, "head_override": True, "reserve_after": 1.0, "reserve_bound": 0.0, "explore_estimate": False,
    "split_spans": False, "fragment_swaps": False, "swap_narrow": False, "swap_back": 0.0,
    "fragment_growth": 0.0, "growth_discount": 0.0,
}


def rules_off(**settings: Any) -> PlannerParams:
    """:class:`PlannerParams` with the earlier defaults and ``settings`` on top."""
    return PlannerParams(**{**EARLIER, **settings})
