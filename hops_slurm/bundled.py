"""The files hops-slurm ships besides its Python code, found the same way in a checkout and in a wheel.

Where it sits: every command that reads a shipped file finds it here (:func:`bundled`, or under
:func:`bundle_root` for a path named at import time): the submit hook's Lua
files (``hooks/*.lua``), the sample configuration (``etc/hops.toml``), the slurm.conf snippet, the systemd
units and cron files, the Grafana dashboard, the cluster specs of ``simulate``/``whatif``, the demo's jobs and
workload, the minicluster specs. In the repository they stay at ``hooks/`` and ``etc/``; the package reaches
them through ``hops_slurm/_bundle/hooks`` and ``hops_slurm/_bundle/etc`` (links to those folders), which an
editable install (``make install``) follows into the checkout and ``python -m build`` copies into the sdist
and the wheel as package data (``pyproject.toml``). One lookup, :mod:`importlib.resources`, either way.

:func:`export_site_files` is ``hops-slurm site files DIR``: the subset an administrator installs on a
Slurm host, copied out without ever overwriting a file unless asked (``force``) and without following a
link planted where a file goes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from hops_slurm.errors import HopsError

PACKAGE = "hops_slurm"
BUNDLE = "_bundle"
#: hooks/*.lua that only the tests and ``bench hook`` run (the parser outside slurmctld): not a site file
DEV_HOOKS = frozenset({"run_parser.lua"})
#: (shipped folder, glob) of what ``site files`` copies out, to the same relative path in the administrator's
#: DIR (DIR/hooks/job_submit.lua, DIR/etc/hops.toml ...), so the admin guide's paths hold inside DIR
SITE_FILES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("hooks",), "*.lua"),
    (("etc",), "hops.toml"),
    (("etc", "slurm.conf.d"), "*.conf"),
    (("etc", "systemd"), "*"),
    (("etc", "cron"), "*"),
    (("etc", "grafana"), "*.json"),
)


def bundle_root() -> Path:
    """The folder that holds the shipped ``hooks/`` and ``etc/`` (inside the installed package)."""
    root = resources.files(PACKAGE) / BUNDLE
    if not isinstance(root, Path):  # a zip import: commands need real files (slurmctld reads the hook)
        raise HopsError(f"{PACKAGE} is installed as an archive ({root}): install the wheel with pip")
    return root


def checkout_root() -> Path | None:
    """The source checkout this package runs from (an editable install), else None: where the developer's
    outputs go (``var/``, ``docs/``) and recorded test data is; never where a shipped file is looked for."""
    root = Path(resources.files(PACKAGE).joinpath("__init__.py")).resolve().parents[1]
    return root if (root / "pyproject.toml").is_file() and (root / "tests").is_dir() else None


def bundled(*parts: str) -> Path:
    """The shipped file or folder ``parts`` (``bundled("etc", "hops.toml")``); an error naming it when the
    installation lacks it (a wheel built without its package data)."""
    path = bundle_root().joinpath(*parts)
    if not path.exists():
        raise HopsError(f"{'/'.join(parts)} is not in this installation of hops-slurm ({bundle_root()}): "
                        "reinstall from a wheel built with `python -m build`")
    return path


def hook_file(name: str = "job_submit.lua") -> Path:
    """A file of the submit hook (``hooks/<name>``)."""
    return bundled("hooks", name)


def sample_config() -> Path:
    """The sample site configuration (``etc/hops.toml``): a template, never the daemon's configuration."""
    return bundled("etc", "hops.toml")


@dataclass(frozen=True)
class Exported:
    """One site file: where it went, and whether it was written or an existing file was kept."""

    path: Path
    written: bool


def site_files() -> list[tuple[Path, Path]]:
    """(shipped file, its path relative to the administrator's folder) for every site file."""
    out: list[tuple[Path, Path]] = []
    for parts, pattern in SITE_FILES:
        for src in sorted(bundled(*parts).glob(pattern)):
            if src.is_file() and src.name not in DEV_HOOKS:
                out.append((src, Path(*parts) / src.name))
    return out


def export_site_files(dest: Path, *, force: bool = False) -> list[Exported]:
    """Copy the site files into ``dest`` (created if missing). An existing file is kept unless ``force``;
    with ``force`` it is replaced through a new file and a rename, so a link planted at its place is
    replaced, never followed."""
    done: list[Exported] = []
    for src, rel in site_files():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if os.path.lexists(target) and not force:
            done.append(Exported(target, written=False))
            continue
        data, mode = src.read_bytes(), src.stat().st_mode & 0o755
        tmp = target.with_name(f".{target.name}.hops-tmp")
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
        done.append(Exported(target, written=True))
    return done
