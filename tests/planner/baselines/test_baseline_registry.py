"""The registry: every name builds a fresh policy; unknown names and parameters fail with a clear message."""

from __future__ import annotations

import pytest

from hops_slurm.errors import HopsError
from planner.baselines import POLICY_NAMES, make_policy
from planner.views import Policy


def test_every_name_builds_a_policy_named_after_it() -> None:
    assert set(POLICY_NAMES) == {"gavel", "gavel-lr", "sia", "sia-lr", "themis", "slurm-backfill"}
    for name in POLICY_NAMES:
        policy = make_policy(name)
        assert isinstance(policy, Policy) and policy.name == name
        assert make_policy(name) is not policy  # fresh state each time


def test_parameters_reach_the_policy() -> None:
    assert make_policy("themis", f=0.5, lease=300.0).lease == 300.0
    assert make_policy("sia-lr", p=-1.0).p == -1.0


def test_unknown_name_or_parameter_is_an_actionable_error() -> None:
    with pytest.raises(HopsError, match="choose one of: gavel, gavel-lr"):
        make_policy("tiresias")
    with pytest.raises(HopsError, match="bad parameters"):
        make_policy("gavel", round_length=3)
