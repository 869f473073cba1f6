"""Site configuration (``etc/hops.toml``): one pydantic model the engine and the CLI read.

Every key is optional. The ``[planner]`` section is derived from :class:`planner.params.PlannerParams`:
the same keys as a policy name's settings (``hops:sigma=1.2``), the same defaults and the same checks
(:func:`planner.params.check`; meanings and defaults in docs/design.md, "Planner parameters"); this
module adds only the strict reading of types. The other defaults are documented where they are
declared, below. ``load_config`` reports every problem at once, each with its key path. Validation is
strict: no type coercion (``"30"`` is not a number, ``1`` is not a string), no ``inf``/``nan``, every
number bounded above as well as below, names that reach ``scontrol`` limited to safe characters, paths
non-empty (``state_dir`` and ``probe_python`` absolute; the others relative to ``state_dir``, or absolute
under it or under one of ``paths.allowed_roots``, and never in a system directory such as /etc, as
written or through the links that exist), no existing directory among them world-writable, no unknown
key; and every key is read by the engine or the CLI
(``tests/hops_slurm/test_config.py`` checks that).
"""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
import os
import stat
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, create_model, field_validator,
                      model_validator)

from hops_slurm import tomlfile
from hops_slurm.errors import ConfigError
from hops_slurm.validation import format_validation_error
from profiler.preempt import PREEMPT_SIGNALS
from planner.params import FIELD_TYPES, PlannerParams, check, setting_key


def _as_path(v: object) -> object:
    if isinstance(v, Path):
        return v
    if not isinstance(v, str):
        raise ValueError("must be a path (a string)")
    if not v.strip() or "\x00" in v:
        raise ValueError("must be a non-empty path")
    return Path(v)


def _absolute(p: Path) -> Path:
    if not p.is_absolute():
        raise ValueError(f"must be an absolute path (got {str(p)!r})")
    return p


def _inside(p: Path) -> Path:
    if ".." in p.parts:
        raise ValueError(f"must not contain '..' (got {str(p)!r})")
    return p


def _python(v: str) -> str:
    if v and not Path(v).is_absolute():
        raise ValueError(f"must be '' or an absolute path to a python (got {v!r})")
    return v


AbsPath = Annotated[Path, BeforeValidator(_as_path), AfterValidator(_absolute)]
SubPath = Annotated[Path, BeforeValidator(_as_path), AfterValidator(_inside)]  # relative: inside state_dir
SlurmName = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")]
DAY = 86400.0


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True, allow_inf_nan=False)


class SchedulerConfig(_Section):
    round_length: float = Field(360.0, ge=1, le=DAY, description="seconds between rounds (every policy: Gavel's 360 s)")
    queue_refresh: float = Field(30.0, ge=1, le=DAY, description="seconds between reads of Slurm's queue")

    @model_validator(mode="after")
    def _refresh_within_round(self) -> SchedulerConfig:
        if self.queue_refresh > self.round_length:
            raise ValueError(f"queue_refresh ({self.queue_refresh:g} s) is longer than round_length ({self.round_length:g} s)")
        return self


class _PlannerBase(_Section):
    def params(self) -> PlannerParams:
        return PlannerParams(**{f.name: getattr(self, f.name) for f in dataclasses.fields(PlannerParams)})


def _planner_section() -> type[_PlannerBase]:
    """``[planner]``: one field per :class:`PlannerParams` field, its default and its check."""
    fields: dict[str, Any] = {
        f.name: (Annotated[FIELD_TYPES[f.name], AfterValidator(functools.partial(check, f.name))],
                 Field(f.default, alias=setting_key(f.name)))
        for f in dataclasses.fields(PlannerParams)
    }
    return create_model("PlannerSection", __base__=_PlannerBase, **fields)


if TYPE_CHECKING:
    from estimator.honesty import HonestyParams

    PlannerSection = _PlannerBase
else:
    PlannerSection = _planner_section()


class SlurmConfig(_Section):
    partition: SlurmName = Field("hops", description="partition whose jobs Hops manages (the first of `partitions` "
                                 "when that is given)")
    partitions: list[SlurmName] = Field(default_factory=list, max_length=64,
                                        description="the Hops partitions, any names, one or several; the first is where "
                                        "a #HOPS job that names no partition goes. Empty: [partition]")
    profiler_partition: SlurmName = Field("profiler", description="partition the probes run in")

    @model_validator(mode="after")
    def _partitions(self) -> SlurmConfig:
        if self.partitions:
            if len(set(self.partitions)) != len(self.partitions):
                raise ValueError("slurm.partitions names a partition twice")
            if "partition" in self.model_fields_set and self.partition != self.partitions[0]:
                raise ValueError(f"slurm.partition ({self.partition}) must be the first of slurm.partitions, or left out")
            self.partition = self.partitions[0]
        else:
            self.partitions = [self.partition]
        return self

    @property
    def hops_partitions(self) -> tuple[str, ...]:
        """Every Hops partition, the default (the one a #HOPS job that names none goes to) first."""
        return tuple(self.partitions)


#: the operating system's own directories: no path key may lead into one, nor state_dir or a root be one
SYSTEM_DIRS = tuple(Path(d) for d in ("/etc", "/bin", "/sbin", "/usr", "/lib", "/lib32", "/lib64", "/libx32",
                                      "/boot", "/dev", "/proc", "/sys", "/root"))


def _within(p: Path, root: Path) -> bool:
    return p == root or root in p.parents


def _forms(p: Path) -> tuple[Path, Path]:
    """``p`` normalised as written, and with the links that exist today followed."""
    return Path(os.path.normpath(p)), Path(os.path.realpath(p))


def _system(p: Path) -> Path | None:
    """The system directory ``p`` is (in), or the root ``/`` itself; None when neither."""
    for form in _forms(p):
        if form == Path("/"):
            return form
        for d in SYSTEM_DIRS:
            if _within(form, d):
                return d
    return None


class PathsConfig(_Section):
    state_dir: AbsPath = Path("/var/lib/hops-slurm")
    store: SubPath = Path("store.sqlite")  # relative paths are inside state_dir
    journal: SubPath = Path("journal.sqlite")
    engine_db: SubPath = Path("engine.sqlite")  # the engine's job accounting (wait, age, profiles)
    records: SubPath = Path("records.sqlite")  # JobRecord/RoundRecord for `hops-slurm report --records`
    #: where `hops-slurm calibrate` writes its measurements and the engine reads them (B_link, B_net per GPU type)
    calibrations: SubPath = Path("calibrations")
    #: absolute directories besides state_dir where a path key may point (an absolute path elsewhere is refused)
    allowed_roots: Annotated[list[AbsPath], Field(max_length=16)] = Field(default_factory=list)

    def resolve(self, p: Path) -> Path:
        return p if p.is_absolute() else self.state_dir / p

    def check_place(self, key: str, p: Path) -> None:
        """Raise ValueError unless ``p`` (a path key's value) resolves under state_dir or an allowed root and
        into no system directory, as written and with today's links followed."""
        path = self.resolve(p)
        system = _system(path)
        if system is not None:
            raise ValueError(f"{key} ({path}) is in the system directory {system}: refused")
        roots = [form for root in (self.state_dir, *self.allowed_roots) for form in _forms(root)]
        if not all(any(_within(form, root) for root in roots) for form in _forms(path)):
            raise ValueError(f"{key} ({path}) is outside paths.state_dir ({self.state_dir}) and paths.allowed_roots: "
                             "use a path relative to state_dir, or add its directory to paths.allowed_roots")

    @model_validator(mode="after")
    def _places(self) -> PathsConfig:
        for key, root in (("paths.state_dir", self.state_dir),
                          *((f"paths.allowed_roots.{i}", r) for i, r in enumerate(self.allowed_roots))):
            system = _system(root)
            if system is not None:
                where = "the file system root" if system == Path("/") else f"in the system directory {system}"
                raise ValueError(f"{key} ({root}) is {where}: refused")
        for key in ("store", "journal", "engine_db", "records", "calibrations"):
            self.check_place(f"paths.{key}", getattr(self, key))
        return self


class EngineConfig(_Section):
    """Settings of the live engine daemon (``hops-slurm daemon`` / ``plan --once``)."""

    monitor_interval: float = Field(5.0, ge=0.1, le=3600, description="seconds between checks for ended and newly submitted jobs (-> refresh and fragment plan)")
    settle_timeout: float = Field(10.0, ge=0.1, le=3600, description="seconds a round waits for released jobs to start")
    env_dir: SubPath = Path("jobs")  # per-job HOPS_* environment files (relative: inside state_dir)
    probe_dir: SubPath = Path("probes")  # probe scripts and results (relative: inside state_dir)
    probe_python: Annotated[str, AfterValidator(_python)] = Field(
        "", max_length=4096, description="python that runs `-m profiler.probe` in probe jobs ('' = the engine's own)")
    probe_size: Literal["tiny", "default", "full"] = "default"
    probe_iterations: int = Field(15, ge=1, le=1000)
    probe_time_limit: float = Field(300.0, ge=1, le=DAY, description="seconds a probe may run before it counts as failed")
    probe_device: str = Field("auto", pattern=r"^(auto|cpu|cuda(:[0-9]{1,2})?)$", description="--device of the probe: auto, cpu, cuda[:N]")
    probe_retries: int = Field(1, ge=0, le=5, description="resubmissions of a probe that crashed, timed out or left no record")
    probe_data_parallel: list[Annotated[int, Field(ge=2, le=16)]] = Field(
        [], max_length=4, description="GPU counts a zoo model's probe also runs data-parallel on one node of each "
        "type (the probe then takes the largest count of GPUs); their throughputs go into the store as runtime "
        "records would. Empty (default): probes time one GPU, as the paper's (docs/results/estimator-learning.md)")
    probe_in_place: bool = Field(True, description="a job of a model without data starts at once on idle GPUs, "
                                 "measured by its runtime records; false: probed before it is planned (the paper)")
    default_b_link: float = Field(1.0e10, ge=1e3, le=1e15, description="params/s within a node until `hops-slurm calibrate` measures it")
    default_b_net: float = Field(1.0e9, ge=1e3, le=1e15, description="params/s across nodes until calibrated")
    restart_cost_default: float = Field(60.0, ge=0, le=DAY, description="seconds a restart costs a job whose model "
                                        "has no measured restart (start to first progress record) yet")
    forecast: bool = Field(False, description="forecast each waiting job's start (and a band) after every round "
                           "by running the round loop forward in the simulator on the estimates, in a worker "
                           "beside the rounds (hops_slurm.engine.forecaster), shown by `hops-slurm queue --start` "
                           "(docs/user-guide.md; accuracy: docs/results/forecast.md)")
    forecast_arrivals: float = Field(0.0, ge=0, le=DAY, description="seconds: each forecast expects the jobs "
                                     "submitted in this many seconds before it to be submitted again as many seconds "
                                     "later (the next window brings what the last did: hops_slurm.sim.forecast_arrivals); "
                                     "0 = only the jobs of now (the default; docs/results/forecast.md measures both)")
    preempt_signal: Literal[PREEMPT_SIGNALS] = Field(  # type: ignore[valid-type]
        "USR1", description="signal a running job gets before a planned requeue (docs/preemption.md)")
    preempt_grace: float = Field(120.0, ge=0, le=3600, description="seconds a job has after its notice to save a "
                                 "checkpoint before it is requeued; 0 = no notice")
    offer_file: AbsPath | None = Field(None, description="the submit hook's offer file, `hops-offer` beside "
                                    "job_submit.lua (e.g. /etc/slurm/hops-offer): while no Hops job waits, a new job "
                                    "is not held but starts on idle GPUs at Slurm's next pass (docs/design.md, \"Offers\"); unset: "
                                    "every new job is held until a plan places it")

    hook_dir: AbsPath | None = Field(None, description="the directory of the installed Hops submit-hook module "
                                     "(hops_submit.lua), e.g. /etc/slurm: the daemon writes the Hops partitions there "
                                     "(hops-partitions), which the hook reads; unset: the directory of offer_file, else none "
                                     "is written")

    @field_validator("offer_file")
    @classmethod
    def _offer_file(cls, v: Path | None) -> Path | None:
        if v is not None and v.name != "hops-offer":
            raise ValueError(f"must name a file hops-offer beside job_submit.lua (got {str(v)[:200]!r})")
        return v


class FailOpenConfig(_Section):
    """What happens to held Hops jobs while the daemon is gone (``hops-slurm failopen``, run by a timer)."""

    mode: Literal["hold", "release"] = Field("hold", description="hold: jobs wait for the daemon; release: "
                                             "after `grace` they go to Slurm's own scheduling")
    grace: float = Field(900.0, ge=60.0, le=7 * 86400.0, description="seconds without a sign of the daemon "
                         "before a held job is released")
    gpus: Literal["min", "max"] = Field("min", description="which count of the job's gpus= list it asks Slurm for")


def _ip_address(v: str) -> str:
    try:
        return str(ipaddress.ip_address(v))
    except ValueError:
        raise ValueError(f"must be an IP address such as 127.0.0.1 or ::1 (got {v[:64]!r})") from None


class MetricsConfig(_Section):
    """The daemon's Prometheus endpoint (:mod:`hops_slurm.engine.exporter`); off unless ``port`` is set."""

    port: int = Field(0, ge=0, le=65535, description="TCP port of the /metrics endpoint; 0 = no endpoint")
    address: Annotated[str, AfterValidator(_ip_address)] = Field(
        "127.0.0.1", min_length=2, max_length=45, description="address it listens on (loopback unless set)")
    raqlr_window: float = Field(3600.0, ge=60.0, le=30 * 86400.0, description="seconds: RAQLR (eq. 7) averages "
                                "the jobs that ended within this window")


class HonestyConfig(_Section):
    """Defences against understated ``samples=`` (issue 16, :mod:`estimator.honesty`,
    :mod:`hops_slurm.engine.honesty_review`): re-aging, the users' history, and what happens to a job that
    processed more than ``1 + margin`` times what it declared."""

    enabled: bool = Field(True, description="re-age jobs past their declaration and weigh each user's history")
    tolerance: float = Field(0.05, ge=0, le=1, description="processed/declared up to 1 + tolerance counts as honest")
    headroom: float = Field(1.0, ge=0, le=100, description="a job past its declaration is aged for (1 + headroom) x "
                            "the samples it processed so far")
    margin: float = Field(1.0, ge=0, le=1000, description="processed > (1 + margin) x declared: `action` applies")
    action: Literal["none", "warn", "release", "requeue-hold"] = Field(
        "warn", description="none; warn: the reason in the job's Comment; release: the job leaves Hops (keeps "
        "running, no longer planned); requeue-hold: requeued and held, the reason in its Comment")
    history_jobs: int = Field(20, ge=0, le=10000, description="a user's last N jobs make their history")
    history_cap: float = Field(1000.0, ge=1, le=1e6, description="bound on the history factor of a user's ages")

    def params(self) -> HonestyParams:
        """The pure module's :class:`estimator.honesty.HonestyParams` for these settings."""
        from estimator.honesty import HonestyParams

        return HonestyParams(enabled=self.enabled, tolerance=self.tolerance, headroom=self.headroom,
                             margin=self.margin, history_jobs=self.history_jobs, history_cap=self.history_cap)


class SiteConfig(_Section):
    engine: EngineConfig = Field(default_factory=EngineConfig)
    failopen: FailOpenConfig = Field(default_factory=FailOpenConfig)
    honesty: HonestyConfig = Field(default_factory=HonestyConfig)
    metrics: MetricsConfig = Field(default_factory=MetricsConfig)
    scheduler: SchedulerConfig = Field(default_factory=SchedulerConfig)
    planner_section: PlannerSection = Field(default_factory=PlannerSection, alias="planner")
    slurm: SlurmConfig = Field(default_factory=SlurmConfig)
    paths: PathsConfig = Field(default_factory=PathsConfig)

    @model_validator(mode="before")
    @classmethod
    def _moved_keys(cls, data: Any) -> Any:
        """Keys of earlier releases get a message saying where they went, not just "unknown key"."""
        if isinstance(data, dict):
            old = [f"solver.{k}" for k in data.get("solver") or {}] if isinstance(data.get("solver"), dict) else []
            scheduler = data.get("scheduler")
            old += [f"scheduler.{k}" for k in ("priority", "lambda", "sigma") if isinstance(scheduler, dict) and k in scheduler]
            if old or "solver" in data:
                raise ValueError(f"{', '.join(old) or '[solver]'}: the planner's settings moved to [planner] (priority, "
                                 "lambda, sigma, solver, gap, time_limit ...; docs/design.md, 'Planner parameters')")
        return data

    @property
    def planner(self) -> PlannerParams:
        """The planner parameters of this site (``[planner]``), as :class:`planner.hops.HopsPolicy` takes them."""
        return self.planner_section.params()

    @model_validator(mode="after")
    def _solver_within_round(self) -> SiteConfig:
        limit = self.planner_section.time_limit  # type: ignore[attr-defined]
        if limit >= self.scheduler.round_length:
            raise ValueError(
                f"planner.time_limit ({limit:g} s) must be shorter than scheduler.round_length"
                f" ({self.scheduler.round_length:g} s)"
            )
        if self.slurm.profiler_partition in self.slurm.hops_partitions:
            raise ValueError("slurm.profiler_partition must differ from every Hops partition (slurm.partitions)")
        p = self.paths
        p.check_place("engine.env_dir", self.engine.env_dir)
        p.check_place("engine.probe_dir", self.engine.probe_dir)
        for key, path in (("paths.state_dir", p.state_dir), ("engine.env_dir", p.resolve(self.engine.env_dir)),
                          ("engine.probe_dir", p.resolve(self.engine.probe_dir))):
            if _world_writable(path):
                raise ValueError(f"{key} ({path}) is a world-writable directory: any user could plant files the "
                                 "engine reads (chmod o-w, or choose another directory)")
        return self


def _world_writable(path: Path) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False  # not there yet: the engine creates it
    return stat.S_ISDIR(st.st_mode) and bool(st.st_mode & stat.S_IWOTH)


def parse_config(data: dict[str, object], source: str = "config") -> SiteConfig:
    try:
        return SiteConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {exc.error_count()} problem(s):\n{format_validation_error(exc)}") from None


def load_config(path: Path) -> SiteConfig:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start + 1})") from None
    try:
        data = tomlfile.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    return parse_config(data, str(path))
