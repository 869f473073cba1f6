"""tests/planner/rules_off.py: the earlier defaults it keeps differ from today's in exactly the settings it names,
so a test built on it sees every rule of the JCT combination off and nothing else changed."""

from __future__ import annotations

import dataclasses

from planner.params import PlannerParams
from tests.planner.rules_off import EARLIER, rules_off


def test_the_earlier_defaults_differ_from_todays_in_each_named_setting_and_only_there() -> None:
    today, earlier = PlannerParams(), rules_off()
    changed = {f.name for f in dataclasses.fields(today) if getattr(today, f.name) != getattr(earlier, f.name)}
    assert changed == set(EARLIER)
    assert rules_off(sigma=1.2).sigma == 1.2 and rules_off(sigma=1.2).restart_penalty == EARLIER["restart_penalty"]
