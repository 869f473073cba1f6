"""Planner parameters: the knobs the site config (or a simulation run) hands to :mod:`planner.hops`.

Sits at the edge of the planner: the engine/simulator build one :class:`PlannerParams` from the site
configuration and pass it to :class:`planner.hops.HopsPolicy`; every other planner module reads it.
"""

from __future__ import annotations

from dataclasses import dataclass

SOLVERS = ("CBC", "HiGHS")
FORMULATIONS = ("compact", "plain")
WINDOW_RULES = ("waiting", "active", "all")


@dataclass(frozen=True)
class PlannerParams:
    """Parameters of one Hops planner.

    ``lambda_`` is the fairness knob of eq. 11 (``None``: the priority's default, 1, or 2 for FTF as
    DESIGN.md says); ``sigma`` the sensitivity threshold (eq. 10); ``window`` the service-window rule
    (``"waiting"``: the paper's rule, the window cut from the waiting queue by minimum requirements with
    running jobs always planned; ``"active"``: the same cut over every active job, running ones
    included, the reading before docs/design.md, kept for the ablation; ``"all"``: no window);
    ``gap`` the relative MIP gap; ``node_limit`` branch-and-bound nodes per solve (the deterministic
    limit); ``time_limit`` seconds per solve, a safety net only; ``solver`` ``"CBC"`` or ``"HiGHS"``;
    ``priority`` a name
    from :mod:`planner.priorities`; ``formulation`` ``"compact"`` (node classes aggregated, exact, fast)
    or ``"plain"`` (eq. 11-13 with one binary per concrete config, the reference).

    ``restart_penalty`` (not in the paper's eq. 11; 0 = the paper's objective) prices a move: the
    fraction of its gain G a running job's candidate loses when it is not the job's current config
    (another node, class or GPU count: one restart, the simulator's 60 s, a checkpoint/restore live).
    In the compact formulation the current signature is free and the post-solve mapping pins it to
    the nodes the job holds (:mod:`planner.keep`). Must be in [0, 1). The default is chosen with
    evidence in docs/results/restart-ablation.md.

    ``pin_running``: when a compact plan moves a running job to an equivalent placement (same classes
    and GPU counts on other nodes, a restart for nothing), solve again with running jobs pinned to the
    nodes they hold; False only for the ablation.

    ``entity_tolerance`` (> 0): nodes of one server class whose estimated throughput differs by more
    than this fraction become different planner classes (:mod:`planner.entities`); 0 turns it off.
    """

    lambda_: float | None = None
    sigma: float = 1.4
    window: str = "waiting"
    gap: float = 0.01
    node_limit: int = 2000
    time_limit: float = 60.0
    solver: str = "CBC"
    priority: str = "lr"
    formulation: str = "compact"
    sensitivity_adjustment: bool = True
    restart_penalty: float = 0.2
    pin_running: bool = True
    entity_tolerance: float = 0.05

    def __post_init__(self) -> None:
        if self.solver not in SOLVERS:
            raise ValueError(f"planner solver {self.solver!r} unknown; choose one of {', '.join(SOLVERS)}")
        if self.formulation not in FORMULATIONS:
            raise ValueError(f"planner formulation {self.formulation!r} unknown; choose one of {', '.join(FORMULATIONS)}")
        if self.window not in WINDOW_RULES:
            raise ValueError(f"planner window rule {self.window!r} unknown; choose one of {', '.join(WINDOW_RULES)}")
        if not 0.0 <= self.gap < 1.0:
            raise ValueError(f"planner gap {self.gap} must be in [0, 1), e.g. 0.01 for 1%")
        if self.time_limit <= 0:
            raise ValueError(f"planner time_limit {self.time_limit} must be positive seconds")
        if self.sigma <= 0:
            raise ValueError(f"planner sigma {self.sigma} must be positive (the paper uses 1.4)")
        if not 0.0 <= self.restart_penalty < 1.0:
            raise ValueError(
                f"planner restart_penalty {self.restart_penalty} must be in [0, 1); 0 is the paper's objective")
        if self.node_limit < 1:
            raise ValueError(f"planner node_limit {self.node_limit} must be a positive number of nodes")
        if not 0.0 <= self.entity_tolerance < 1.0:
            raise ValueError(f"planner entity_tolerance {self.entity_tolerance} must be in [0, 1); 0 turns it off")
        if self.lambda_ is not None and self.lambda_ < 0:
            raise ValueError(f"planner lambda_ {self.lambda_} must be >= 0")
