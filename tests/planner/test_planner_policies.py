"""planner.policies: every name builds a fresh policy; Hops names carry planner parameters; unknown
names and bad parameters fail with one message naming the policy and the problem."""

from __future__ import annotations

import pytest

from hops_slurm.errors import HopsError
from planner.hops import HopsPolicy
from planner.params import PlannerParams
from planner.policies import BASELINES, make_policy, policy_names, split_policy_list
from planner.views import Policy


def test_every_name_builds_a_fresh_policy_named_after_it() -> None:
    assert set(BASELINES) == {"gavel", "gavel-lr", "sia", "sia-lr", "themis", "slurm-backfill", "slurm-multifactor",
                              "fifo-greedy"}
    assert policy_names()[0] == "hops"
    for name in policy_names():
        policy = make_policy(name)
        assert isinstance(policy, Policy) and policy.name == name
        assert make_policy(name) is not policy  # fresh state each time


def test_baseline_options_reach_the_policy() -> None:
    assert make_policy("themis", f=0.5, lease=300.0).lease == 300.0  # type: ignore[attr-defined]
    assert make_policy("sia-lr", p=-1.0).p == -1.0  # type: ignore[attr-defined]


def test_a_list_keeps_each_policys_settings_together() -> None:
    assert split_policy_list("hops, hops:restart_penalty=0.1,sigma=1.2,gavel-lr,hops-ftf:lambda=3") == [
        "hops", "hops:restart_penalty=0.1,sigma=1.2", "gavel-lr", "hops-ftf:lambda=3"]


def test_hops_settings_reach_the_planner_and_name_the_run() -> None:
    policy = make_policy("hops:restart_penalty=0.1,sigma=1.2,solver=HiGHS,sensitivity_adjustment=false,node_limit=50")
    assert isinstance(policy, HopsPolicy)
    p = policy.params
    assert (p.restart_penalty, p.sigma, p.solver, p.sensitivity_adjustment, p.priority, p.node_limit) == (
        0.1, 1.2, "HiGHS", False, "lr", 50)
    assert policy.name == "hops:restart_penalty=0.1,sigma=1.2,solver=HiGHS,sensitivity_adjustment=false,node_limit=50"
    ftf = make_policy("hops-ftf:lambda=3")
    assert isinstance(ftf, HopsPolicy) and (ftf.params.priority, ftf.params.lambda_) == ("ftf", 3.0)
    hops = make_policy("hops")
    assert isinstance(hops, HopsPolicy) and hops.params == PlannerParams()  # the defaults


def test_site_parameters_are_the_start_and_the_name_applies_on_top() -> None:
    site = PlannerParams(sigma=1.2, time_limit=20.0)
    daemon = make_policy("hops", site)
    assert isinstance(daemon, HopsPolicy) and daemon.params == site
    las = make_policy("hops-las:gap=0.05", site)
    assert isinstance(las, HopsPolicy) and las.params == PlannerParams(priority="las", sigma=1.2, time_limit=20.0, gap=0.05)


@pytest.mark.parametrize(("name", "message"), [
    ("hops:restart_penalty", "is not key=value with a planner parameter"),
    ("hops:speed=2", "'speed=2' is not key=value with a planner parameter (priority, lambda, sigma"),
    ("hops:sigma=fast", "sigma='fast' is not valid: must be a number"),
    ("hops:pin_running=yes", "pin_running='yes' is not valid: must be true or false"),
    ("hops:restart_penalty=1.5", "restart_penalty = 1.5: must be a number in [0, 1)"),
    ("hops:solver=gurobi", "solver = 'gurobi': must be one of auto, CBC, HiGHS"),
    ("hops-random", "priority = 'random': must be one of lr, ftf"),
    ("gavel:sigma=1.2", "only Hops policies take planner parameters"),
    ("tiresias", "choose one of: hops, gavel, gavel-lr"),
])
def test_bad_names_and_settings_name_the_policy_and_the_problem(name: str, message: str) -> None:
    with pytest.raises(HopsError) as err:
        make_policy(name)
    assert name in str(err.value) and message in str(err.value)


def test_bad_options_are_an_actionable_error() -> None:
    with pytest.raises(HopsError, match="bad parameters"):
        make_policy("gavel", round_length=3)
    with pytest.raises(HopsError, match="takes planner parameters"):
        make_policy("hops", lease=3)
    with pytest.raises(HopsError, match="only Hops policies"):
        make_policy("themis", PlannerParams())
