"""Binary columns added to a python-mip model in one batch: what column generation adds per pricing round.

Used by :class:`planner.compact.CompactSolve` (its starting columns and the columns that enter against the
duals, tens of thousands at 16,384 GPUs). python-mip adds a column through a :class:`mip.Column` of row
objects, a list lookup and a variable object per call; with CBC this goes straight to the C call python-mip
itself makes (``Cbc_addCol`` with the same name, bounds, objective, type and coefficients, in the same order),
so the model, and every solve of it, is the same. Any other solver, or a python-mip whose CBC layer does not
look as expected, takes python-mip's own path. Pure: a model and numbers in, variables out.
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


def add_binary_columns(m: mip.Model, columns: Sequence[ColumnSpec]) -> list[mip.Var]:
    """Add ``columns`` as binary variables (bounds 0 and 1, unnamed), in order; their variables."""
    raw = _raw_cbc(m)
    if raw is None:
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
    if _raw_cbc(m) is None:
        return None
    from mip import cbc

    x = getattr(m.solver, "_SolverCbc__x", None)
    ffi = cbc.ffi
    if x is None or x == ffi.NULL or not isinstance(x, ffi.CData):
        return None
    return ffi.unpack(x, m.num_cols)  # type: ignore[no-any-return]
