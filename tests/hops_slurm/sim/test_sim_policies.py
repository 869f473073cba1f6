"""Policy names of the simulator: Hops with planner parameters after a colon, and the ``--policies`` list."""

from __future__ import annotations

import pytest

from hops_slurm.errors import HopsError
from hops_slurm.sim.policies import make_policy, split_policy_list
from planner.params import PlannerParams


def test_a_list_keeps_each_policys_settings_together() -> None:
    assert split_policy_list("hops, hops:restart_penalty=0.1,sigma=1.2,gavel-lr,hops-ftf:lambda=3") == [
        "hops", "hops:restart_penalty=0.1,sigma=1.2", "gavel-lr", "hops-ftf:lambda=3"]


def test_hops_settings_reach_the_planner_and_name_the_run() -> None:
    policy = make_policy("hops:restart_penalty=0.1,sigma=1.2,solver=HiGHS,sensitivity_adjustment=false")
    p = policy.params  # type: ignore[attr-defined]
    assert (p.restart_penalty, p.sigma, p.solver, p.sensitivity_adjustment, p.priority) == (0.1, 1.2, "HiGHS", False, "lr")
    assert policy.name == "hops:restart_penalty=0.1,sigma=1.2,solver=HiGHS,sensitivity_adjustment=false"
    ftf = make_policy("hops-ftf:lambda=3")
    assert (ftf.params.priority, ftf.params.lambda_) == ("ftf", 3.0)  # type: ignore[attr-defined]
    assert make_policy("hops").params == PlannerParams()  # type: ignore[attr-defined]  # the defaults


@pytest.mark.parametrize(("name", "message"), [
    ("hops:restart_penalty", "is not key=value with a planner parameter"),
    ("hops:speed=2", "'speed=2' is not key=value with a planner parameter (entity_tolerance, formulation, gap"),
    ("hops:sigma=fast", "sigma='fast' is not a valid value"),
    ("hops:restart_penalty=1.5", "restart_penalty 1.5 must be in [0, 1)"),
    ("hops:solver=gurobi", "solver 'gurobi' unknown"),
])
def test_bad_settings_name_the_policy_and_the_problem(name: str, message: str) -> None:
    with pytest.raises(HopsError) as err:
        make_policy(name)
    assert name in str(err.value) and message in str(err.value)
