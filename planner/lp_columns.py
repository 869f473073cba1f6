"""Binary columns added to a python-mip model in one batch, its LP relaxation solved and read in one call each:
what column generation does per pricing round.

Used by :class:`planner.compact.CompactSolve` (its starting columns and the columns that enter against the
duals, tens of thousands at 16,384 GPUs). python-mip adds a column through a :class:`mip.Column` of row
objects, a list lookup and a variable object per call; with CBC this goes straight to the C call python-mip
itself makes (``Cbc_addCol`` with the same name, bounds, objective, type and coefficients, in the same order),
so the model, and every solve of it, is the same. With HiGHS python-mip adds each such column with one call per
coefficient (``Highs_addCol``, then ``Highs_changeCoeff`` per row); here one ``Highs_addCols`` takes the batch
(the same columns, bounds, objective and coefficients) and one call makes them integer. HiGHS's LP relaxation:
python-mip reads every column's type one C call at a time before the solve to restore it after; when every
column is integer (the compact model: pattern counts and binaries) :func:`solve_relaxation` makes them all
continuous, solves, and makes them all integer again in one call each. Any other solver, or a python-mip whose
CBC or HiGHS layer does not look as expected, takes python-mip's own path. Pure: a model and numbers in,
variables and values out.
"""

from __future__ import annotations

from collections.abc import Sequence

import mip

#: one column: (objective coefficient, row indices, coefficients), rows in the order python-mip would get them
ColumnSpec = tuple[float, Sequence[int], Sequence[float]]


def _raw_cbc(m: mip.Model) -> tuple[object, object, object, list[mip.Var]] | None:
    """(the CBC library, cffi, the C model, the model's variable list) when the fast path applies."""
    if m.solver_name.upper() != "CBC":
        return None
    try:
        from mip import cbc
    except ImportError:  # pragma: no cover (CBC is python-mip's bundled solver)
        return None
    solver = m.solver
    c_model = getattr(solver, "_model", None)
    held = getattr(m.vars, "_VarList__vars", None)
    lib, ffi = getattr(cbc, "cbclib", None), getattr(cbc, "ffi", None)
    if c_model is None or not isinstance(held, list) or lib is None or ffi is None \
            or not hasattr(lib, "Cbc_addCol") or len(held) != m.num_cols:
        return None
    return lib, ffi, c_model, held


def _raw_highs(m: mip.Model) -> tuple[object, object, object, list[mip.Var]] | None:
    """(the HiGHS library, cffi, python-mip's HiGHS solver, the model's variable list) when the fast path
    applies."""
    if m.solver_name.upper() != "HIGHS":
        return None
    try:
        from mip import highs
    except ImportError:  # pragma: no cover (highspy is a dependency)
        return None
    solver = m.solver
    held = getattr(m.vars, "_VarList__vars", None)
    lib, ffi = getattr(solver, "_lib", None), getattr(highs, "ffi", None)
    needed = ("_model", "_flush", "_col_committed", "_col_fill", "_num_int_vars", "_all_cols_continuous", "_x")
    if lib is None or ffi is None or not isinstance(held, list) or not all(hasattr(solver, a) for a in needed) \
            or not all(hasattr(lib, f) for f in ("Highs_addCols", "Highs_changeColsIntegralityByRange",
                                                  "kHighsVarTypeInteger")):
        return None
    return lib, ffi, solver, held


def _highs_columns(raw: tuple[object, object, object, list[mip.Var]], m: mip.Model,
                   columns: Sequence[ColumnSpec]) -> list[mip.Var]:
    from mip.highs import check

    lib, ffi, solver, held = raw
    solver._flush()  # type: ignore[attr-defined]  # (python-mip's pending columns and rows first)
    start = len(held)
    if start != solver._col_committed:  # type: ignore[attr-defined]
        raise RuntimeError("python-mip's HiGHS columns are not what the model holds")
    n = len(columns)
    if not n:
        return []
    starts, at = [], 0
    for _, rows, _ in columns:
        starts.append(at)
        at += len(rows)
    new, c_model = ffi.new, solver._model  # type: ignore[attr-defined]
    check(lib.Highs_addCols(c_model, n, new("double[]", [obj for obj, _, _ in columns]),  # type: ignore[attr-defined]
                            new("double[]", n), new("double[]", [1.0] * n), at, new("int[]", starts),
                            new("int[]", [r for _, rows, _ in columns for r in rows]),
                            new("double[]", [c for _, _, coefs in columns for c in coefs])))
    check(lib.Highs_changeColsIntegralityByRange(  # type: ignore[attr-defined]
        solver._model, start, start + n - 1,  # type: ignore[attr-defined]
        ffi.new("int[]", [lib.kHighsVarTypeInteger] * n)))  # type: ignore[attr-defined]
    solver._col_committed += n  # type: ignore[attr-defined]
    solver._num_int_vars += n  # type: ignore[attr-defined]
    made = [mip.Var(m, start + i) for i in range(n)]
    held.extend(made)
    return made


def solve_relaxation(m: mip.Model, max_seconds: float) -> mip.OptimizationStatus:
    """``m.optimize(relax=True, max_seconds=max_seconds)``: the LP relaxation, integrality as it was after."""
    raw = _raw_highs(m)
    if raw is None:
        return m.optimize(relax=True, max_seconds=max_seconds)
    from mip.highs import check

    lib, ffi, solver, _ = raw
    solver._flush()  # type: ignore[attr-defined]
    n = m.num_cols
    if not n or solver._num_int_vars != n:  # type: ignore[attr-defined]  # (some column continuous: python-mip's way)
        return m.optimize(relax=True, max_seconds=max_seconds)
    solver._all_cols_continuous()  # type: ignore[attr-defined]  # what python-mip's relax does first
    try:
        return m.optimize(max_seconds=max_seconds)  # (every column continuous now: python-mip's relaxed run)
    finally:  # what python-mip's relax does after: every column as it was (each one integer)
        check(lib.Highs_changeColsIntegralityByRange(  # type: ignore[attr-defined]
            solver._model, 0, n - 1, ffi.new("int[]", [lib.kHighsVarTypeInteger] * n)))  # type: ignore[attr-defined]
        solver._num_int_vars = n  # type: ignore[attr-defined]


def add_binary_columns(m: mip.Model, columns: Sequence[ColumnSpec]) -> list[mip.Var]:
    """Add ``columns`` as binary variables (bounds 0 and 1, unnamed), in order; their variables."""
    raw = _raw_cbc(m)
    if raw is None:
        highs_raw = _raw_highs(m)
        if highs_raw is not None:
            return _highs_columns(highs_raw, m, columns)
        constrs = m.constrs
        return [m.add_var(var_type=mip.BINARY, obj=obj,
                          column=mip.Column([constrs[i] for i in rows], list(coefs)))
                for obj, rows, coefs in columns]
    lib, ffi, c_model, held = raw
    add, null = lib.Cbc_addCol, ffi.NULL  # type: ignore[attr-defined]
    name, integer = b"", b"\x01"  # python-mip's unnamed column and its CHAR_ONE for an integer one
    start = len(held)
    # every column's rows and coefficients in one C array each (Cbc_addCol copies what it is given: each
    # column gets a pointer into them, not arrays of its own)
    all_rows = ffi.new("int[]", [r for _, rows, _ in columns for r in rows])  # type: ignore[attr-defined]
    all_coefs = ffi.new("double[]", [c for _, _, coefs in columns for c in coefs])  # type: ignore[attr-defined]
    at = 0
    for obj, rows, _ in columns:
        if rows:
            add(c_model, name, 0.0, 1.0, obj, integer, len(rows), all_rows + at, all_coefs + at)
            at += len(rows)
        else:  # (python-mip passes no arrays for a column with no row)
            add(c_model, name, 0.0, 1.0, obj, integer, 0, null, null)
    made = [mip.Var(m, start + i) for i in range(len(columns))]
    held.extend(made)
    return made


def column_values(m: mip.Model) -> list[float] | None:
    """Every column's value in the last LP solution of ``m``, in column order, read from CBC's solution array
    in one call (what each ``Var.x`` reads one by one); None when the fast path does not apply or there is
    no solution (callers then read ``Var.x``)."""
    highs_raw = _raw_highs(m)
    if highs_raw is not None:
        values: list[float] = highs_raw[2]._x  # type: ignore[attr-defined]  # (what each Var.x reads)
        return values if values and len(values) == m.num_cols else None
    if _raw_cbc(m) is None:
        return None
    from mip import cbc

    x = getattr(m.solver, "_SolverCbc__x", None)
    ffi = cbc.ffi
    if x is None or x == ffi.NULL or not isinstance(x, ffi.CData):
        return None
    return ffi.unpack(x, m.num_cols)  # type: ignore[no-any-return]
