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
    add, new, null = lib.Cbc_addCol, ffi.new, ffi.NULL  # type: ignore[attr-defined]
    name, integer = b"", b"\x01"  # python-mip's unnamed column and its CHAR_ONE for an integer one
    start = len(held)
    for obj, rows, coefs in columns:
        if rows:
            add(c_model, name, 0.0, 1.0, obj, integer, len(rows), new("int[]", rows), new("double[]", coefs))
        else:  # (python-mip passes no arrays for a column with no row)
            add(c_model, name, 0.0, 1.0, obj, integer, 0, null, null)
    made = [mip.Var(m, start + i) for i in range(len(columns))]
    held.extend(made)
    return made
