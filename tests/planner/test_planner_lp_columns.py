"""planner.lp_columns: columns added in one batch make the very model python-mip's own column adds make."""

from __future__ import annotations

import random
from pathlib import Path

import mip
import pytest

from planner.lp_columns import add_binary_columns


def _built(batch: bool, seed: int, *, solver: str = "CBC", counts: int = 4, n_rows: int = 7, n_cols: int = 25,
           least: int = 0) -> tuple[mip.Model, list[mip.Constr]]:
    """Rows first, then binary columns over them (as column generation adds them; each column on ``least`` to 4
    rows), in one batch or by python-mip's own per-column adds; the rows with the model."""
    rng = random.Random(seed)
    m = mip.Model(sense=mip.MAXIMIZE, solver_name=solver)
    m.verbose = 0
    z = [m.add_var(var_type=mip.INTEGER, lb=0, ub=rng.randint(1, 4)) for _ in range(counts)]
    rows = [m.add_constr(mip.xsum(rng.randint(-2, 2) * v for v in z) <= rng.randint(1, 6)) for _ in range(n_rows)]
    specs = []
    for _ in range(n_cols):
        picked = rng.sample(range(len(rows)), rng.randint(least, 4))
        specs.append((rng.uniform(0.1, 3.0), picked, [float(rng.randint(1, 3)) for _ in picked]))
    if batch:
        made = add_binary_columns(m, specs)
    else:
        made = [m.add_var(var_type=mip.BINARY, obj=obj, column=mip.Column([rows[i] for i in idx], coefs))
                for obj, idx, coefs in specs]
    assert [v.idx for v in made] == list(range(len(z), len(z) + len(specs)))
    return m, rows


def _model(batch: bool, seed: int) -> mip.Model:
    """A CBC model, some columns with no row."""
    return _built(batch, seed)[0]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_batch_of_columns_is_the_model_python_mip_makes(seed: int, tmp_path: Path) -> None:
    written = []
    for batch in (False, True):
        m = _model(batch, seed)
        path = tmp_path / f"{batch}.lp"
        m.write(str(path))
        written.append(path.read_text())
        m.optimize(relax=True)
        written.append(repr((m.objective_value, [v.x for v in m.vars], [c.pi for c in m.constrs])))
    assert written[0] == written[2] and written[1] == written[3]
    assert m.num_cols == 29 and len(m.vars) == 29 and m.vars[28].x is not None


@pytest.mark.parametrize("seed", [0, 1])
def test_column_values_are_what_each_variable_reads(seed: int) -> None:
    from planner.lp_columns import column_values

    m = _model(True, seed)
    assert column_values(m) is None  # no solution yet: callers read Var.x
    m.optimize(relax=True)
    assert column_values(m) == [v.x for v in m.vars] and len(m.vars) == 29
    add_binary_columns(m, [(1.0, [0], [1.0])])
    m.optimize(relax=True)
    assert column_values(m) == [v.x for v in m.vars] and len(m.vars) == 30


def _highs_model(batch: bool, seed: int) -> tuple[mip.Model, list[mip.Constr]]:
    """A HiGHS model as the compact solve makes it: integer pattern counts, rows, then binary columns."""
    return _built(batch, seed, solver="HiGHS", counts=5, n_rows=9, n_cols=40, least=1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_highs_batch_and_relaxation_are_python_mips(seed: int, tmp_path: Path) -> None:
    """With HiGHS, a batch of columns is the model python-mip's per-column adds make (written out alike), and
    solve_relaxation is python-mip's relaxed solve: the same LP optimum, and every column integer after it."""
    from planner.lp_columns import column_values, solve_relaxation

    written, optima = [], []
    for batch in (False, True):
        m, rows = _highs_model(batch, seed)
        path = tmp_path / f"{batch}.lp"
        m.write(str(path))
        written.append(path.read_text())
        status = solve_relaxation(m, 10.0) if batch else m.optimize(relax=True, max_seconds=10.0)
        assert status == mip.OptimizationStatus.OPTIMAL
        optima.append(round(float(m.objective_value), 9))
        assert m.num_int == m.num_cols == 45  # the integrality the relaxed solve lifted is back
        assert all(v.var_type != mip.CONTINUOUS for v in m.vars)
        if batch:
            assert column_values(m) == [v.x for v in m.vars]
    assert written[0] == written[1] and optima[0] == optima[1]
    # a later branch and bound still sees binaries: its plan is integral
    m.optimize(max_seconds=10.0)
    assert all(abs(v.x - round(v.x)) < 1e-6 for v in m.vars)
