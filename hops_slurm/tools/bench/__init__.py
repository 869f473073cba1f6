"""Benchmarks (``hops-slurm bench NAME|all``, ``make bench``): speed and accuracy goals live here.

Every module in this package that defines ``NAME`` and ``run(out_dir: Path) -> Path`` is one
benchmark; ``run`` writes its Markdown result under ``out_dir`` (``docs/results`` from ``make bench``)
and returns the path, under the header of :mod:`hops_slurm.tools.results_header`; ``command(env)`` returns,
without running anything, the command that header names (``ENV``: the ``HOPS_BENCH_*`` variables it reads).
A module with ``IN_ALL = False`` (a long one, e.g. ``load``) runs only by name, not
in ``all``. With ``--on-slurm`` (:mod:`hops_slurm.tools.sweep.bench_cells`) each benchmark is a task of one
Slurm job array; one with ``parts(env)`` and ``assemble(out_dir)`` is one task per part, assembled at the
end; one with ``ON_SLURM = False`` (it starts its own minicluster) runs where the command runs. Benchmarks
measure; tests assert behaviour.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def discover() -> dict[str, ModuleType]:
    found: dict[str, ModuleType] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        name = getattr(module, "NAME", None)
        if name and callable(getattr(module, "run", None)):
            found[name] = module
    return dict(sorted(found.items()))
