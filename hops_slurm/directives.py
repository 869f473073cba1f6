"""``#HOPS`` directives: the user-facing contract, parsed from a batch script or ``--comment=hops:...``.

Where it sits: the submit hook (``hooks/job_submit.lua``, same grammar, same test vectors in
``tests/data/directives/``) validates a job at ``sbatch`` time and stores :meth:`HopsDirectives.canonical`
in the job's admin_comment; the engine reads it back with :meth:`HopsDirectives.from_canonical`.

Grammar (one or more ``key=value`` tokens per line, whitespace-separated)::

    #HOPS gpus=1,2,4,8              acceptable GPU counts (at most 8, distinct, 1..1024)
    #HOPS gpus=2-16 levels=4        equal-interval requirement levels between min and max (Hops §2.2);
                                    a range without levels has every count when there are <= 8,
                                    else 8 levels
    #HOPS samples=1.2M              total samples (suffix K, M, G = 10^3, 10^6, 10^9)
    #HOPS epochs=90 dataset-size=1281167      ... or epochs x dataset size
    #HOPS batch-size=64             per-GPU batch size
    #HOPS model=resnet50            a zoo model name, or model=mypkg.train:build (an entrypoint)
    #HOPS lr=0.1@8 lr-scale=sqrt    learning rate at 8 GPUs, scaled linearly (default) or by sqrt
    #HOPS lr=0.05@4,0.1@8           explicit learning rate for every count in gpus
    #HOPS params=25.6M              optional parameter count (else the profiler measures it)

Required: gpus, samples (or epochs with dataset-size), batch-size, model. Like ``#SBATCH``, ``#HOPS``
lines are read from the top of the script until the first line that is neither blank nor a comment.

Canonical form: keys in the fixed order of :data:`CANONICAL_ORDER`, counts expanded, numbers plain
(integers without suffix, learning rates as C's ``%.10g``), optional keys omitted when not given.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from hops_slurm.errors import DirectiveError

MAX_GPUS = 1024
MAX_CHOICES = 8
MAX_SAMPLES = 10**15
MAX_BATCH = 65536
MAX_PARAMS = 10**13
MAX_EPOCHS = 100000
MAX_LR = 1000.0

KEYS = ("gpus", "levels", "samples", "epochs", "dataset-size", "batch-size", "model", "lr", "lr-scale", "params")
CANONICAL_ORDER = ("gpus", "samples", "batch-size", "model", "lr", "lr-scale", "params")
COMMENT_PREFIX = "hops:"

_SUFFIX = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9}
_NUMBER = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([KMG]?)$")
_INT = re.compile(r"^[0-9]{1,7}$")
_ZOO = re.compile(r"^[a-z][a-z0-9_.-]{0,63}$")
_ENTRYPOINT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}(\.[A-Za-z_][A-Za-z0-9_]{0,63}){0,15}:[A-Za-z_][A-Za-z0-9_]{0,63}$")
_LR_VALUE = re.compile(r"^[0-9]+(\.[0-9]+)?([eE]-?[0-9]{1,2})?$")
_KEY = re.compile(r"^[a-z][a-z-]{0,31}$")
_HOPS_LINE = re.compile(r"^#HOPS(\s|$)")


def format_lr(value: float) -> str:
    """Learning rates in canonical form: C's ``%.10g`` (Lua's string.format gives the same)."""
    return "%.10g" % value


class HopsDirectives(BaseModel):
    """A job's validated Hops requirements, in canonical units."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    gpus: tuple[int, ...]
    samples: int
    batch_size: int
    model: str
    lr: tuple[tuple[int, float], ...] | None = None  # (gpu count, learning rate), ascending counts
    lr_scale: Literal["linear", "sqrt"] | None = None
    params: int | None = None

    @field_validator("gpus")
    @classmethod
    def _gpus(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if not v or len(v) > MAX_CHOICES or list(v) != sorted(set(v)) or not all(1 <= g <= MAX_GPUS for g in v):
            raise ValueError(f"gpus must be 1..{MAX_CHOICES} distinct ascending counts in 1..{MAX_GPUS}")
        return v

    @model_validator(mode="after")
    def _lr_consistent(self) -> HopsDirectives:
        if self.lr_scale is not None and (self.lr is None or len(self.lr) != 1):
            raise ValueError("lr-scale needs a single lr=VALUE@N")
        if self.lr is not None and len(self.lr) > 1 and {g for g, _ in self.lr} != set(self.gpus):
            raise ValueError("an explicit lr list must give one learning rate for every count in gpus")
        return self

    # --- derived ------------------------------------------------------------------------------
    def lr_for(self, gpus: int) -> float | None:
        """The learning rate to use at ``gpus`` GPUs (Goyal et al.'s linear rule, or the sqrt rule)."""
        if self.lr is None:
            return None
        table = dict(self.lr)
        if gpus in table:
            return table[gpus]
        if len(self.lr) != 1:
            raise ValueError(f"no learning rate for {gpus} GPUs")
        (ref, base), = self.lr
        ratio = gpus / ref
        return base * (math.sqrt(ratio) if self.lr_scale == "sqrt" else ratio)

    # --- canonical form -----------------------------------------------------------------------
    def canonical(self) -> str:
        parts = [
            "gpus=" + ",".join(str(g) for g in self.gpus),
            f"samples={self.samples}",
            f"batch-size={self.batch_size}",
            f"model={self.model}",
        ]
        if self.lr is not None:
            parts.append("lr=" + ",".join(f"{format_lr(v)}@{g}" for g, v in self.lr))
        if self.lr_scale is not None:
            parts.append(f"lr-scale={self.lr_scale}")
        if self.params is not None:
            parts.append(f"params={self.params}")
        return " ".join(parts)

    @classmethod
    def from_canonical(cls, text: str) -> HopsDirectives:
        return parse_tokens(text.removeprefix(COMMENT_PREFIX).split())


# ------------------------------------------------------------------------------------------------
# parsing
# ------------------------------------------------------------------------------------------------


def directive_lines(script: str) -> list[str]:
    """The ``#HOPS`` lines of a batch script, read like ``#SBATCH``: up to the first command."""
    found: list[str] = []
    for i, line in enumerate(script.splitlines()):
        stripped = line.strip()
        if i == 0 and stripped.startswith("#!"):
            continue
        if not stripped:
            continue
        if not stripped.startswith("#"):
            break
        if _HOPS_LINE.match(stripped):
            found.append(stripped[len("#HOPS") :].strip())
    return found


def parse_script(script: str, comment: str | None = None) -> HopsDirectives | None:
    """Directives from a script's ``#HOPS`` lines and/or a ``hops:...`` comment; None if neither."""
    tokens = [tok for line in directive_lines(script) for tok in line.split()]
    if comment and comment.strip().startswith(COMMENT_PREFIX):
        tokens += comment.strip()[len(COMMENT_PREFIX) :].split()
    elif not tokens:
        return None
    if not tokens:
        raise DirectiveError("gpus", "no directives given (a '#HOPS' line or 'hops:' comment is empty)")
    return parse_tokens(tokens)


def parse_tokens(tokens: list[str]) -> HopsDirectives:
    raw: dict[str, str] = {}
    for tok in tokens:
        key, eq, value = tok.partition("=")
        shown = key if _KEY.match(key) else repr(key[:40])
        if not eq:
            raise DirectiveError(shown, f"expected key=value, got {tok[:60]!r}")
        if not _KEY.match(key) or key not in KEYS:
            raise DirectiveError(shown, f"unknown key (known: {', '.join(KEYS)})")
        if key in raw:
            raise DirectiveError(key, "given twice")
        if not value:
            raise DirectiveError(key, "empty value")
        raw[key] = value
    for key in ("gpus", "batch-size", "model"):
        if key not in raw:
            raise DirectiveError(key, "required key is missing")

    gpus = _parse_gpus(raw["gpus"], raw.get("levels"))
    samples = _parse_samples(raw)
    batch = _bounded_int("batch-size", raw["batch-size"], 1, MAX_BATCH)
    model = _parse_model(raw["model"])
    lr, lr_scale = _parse_lr(raw.get("lr"), raw.get("lr-scale"), gpus)
    params = _parse_quantity("params", raw["params"], MAX_PARAMS) if "params" in raw else None
    return HopsDirectives(gpus=gpus, samples=samples, batch_size=batch, model=model, lr=lr, lr_scale=lr_scale, params=params)


def _bounded_int(key: str, value: str, lo: int, hi: int) -> int:
    if not _INT.match(value):
        raise DirectiveError(key, f"{value[:40]!r} is not a whole number")
    n = int(value)
    if not lo <= n <= hi:
        raise DirectiveError(key, f"{n} is outside {lo}..{hi}")
    return n


def _parse_quantity(key: str, value: str, hi: int) -> int:
    """A positive whole quantity with an optional K/M/G suffix (``1.2M`` = 1200000)."""
    m = _NUMBER.match(value)
    if not m or len(value) > 24:
        raise DirectiveError(key, f"{value[:40]!r} is not a number (use e.g. 1200000 or 1.2M)")
    try:
        exact = Decimal(m.group(1)) * _SUFFIX[m.group(2)]
    except InvalidOperation:
        raise DirectiveError(key, f"{value[:40]!r} is not a number") from None
    if exact != exact.to_integral_value():
        raise DirectiveError(key, f"{value} is not a whole number")
    n = int(exact)
    if not 1 <= n <= hi:
        raise DirectiveError(key, f"{value} is outside 1..{hi:.0e}")
    return n


def _parse_gpus(value: str, levels: str | None) -> tuple[int, ...]:
    if "-" in value:
        lo_s, _, hi_s = value.partition("-")
        lo = _bounded_int("gpus", lo_s, 1, MAX_GPUS)
        hi = _bounded_int("gpus", hi_s, 1, MAX_GPUS)
        if lo >= hi:
            raise DirectiveError("gpus", f"range {value} must go from a smaller to a larger count")
        span = hi - lo + 1
        n = _bounded_int("levels", levels, 2, MAX_CHOICES) if levels is not None else min(span, MAX_CHOICES)
        if n > span:
            raise DirectiveError("levels", f"{n} levels do not fit in the range {value} ({span} counts)")
        # Equal-interval levels from lo to hi inclusive, rounded half up.
        counts = [lo + math.floor((hi - lo) * k / (n - 1) + 0.5) for k in range(n)]
        return tuple(sorted(set(counts)))
    if levels is not None:
        raise DirectiveError("levels", "only applies to a range such as gpus=2-16")
    items = value.split(",")
    if len(items) > MAX_CHOICES:
        raise DirectiveError("gpus", f"at most {MAX_CHOICES} acceptable counts, got {len(items)}")
    counts = [_bounded_int("gpus", item, 1, MAX_GPUS) for item in items]
    dupes = sorted({c for c in counts if counts.count(c) > 1})
    if dupes:
        raise DirectiveError("gpus", f"duplicate count {dupes[0]}")
    return tuple(sorted(counts))


def _parse_samples(raw: dict[str, str]) -> int:
    if "samples" in raw:
        for other in ("epochs", "dataset-size"):
            if other in raw:
                raise DirectiveError(other, "give either samples= or epochs= with dataset-size=, not both")
        return _parse_quantity("samples", raw["samples"], MAX_SAMPLES)
    if "epochs" not in raw and "dataset-size" not in raw:
        raise DirectiveError("samples", "required key is missing (or give epochs= and dataset-size=)")
    if "epochs" not in raw:
        raise DirectiveError("epochs", "dataset-size= needs epochs=")
    if "dataset-size" not in raw:
        raise DirectiveError("dataset-size", "epochs= needs dataset-size=")
    epochs = _bounded_int("epochs", raw["epochs"], 1, MAX_EPOCHS)
    size = _parse_quantity("dataset-size", raw["dataset-size"], MAX_SAMPLES)
    if epochs * size > MAX_SAMPLES:
        raise DirectiveError("epochs", f"epochs x dataset-size exceeds {MAX_SAMPLES:.0e} samples")
    return epochs * size


def _parse_model(value: str) -> str:
    if ":" in value:
        if not _ENTRYPOINT.match(value):
            raise DirectiveError("model", f"{value[:60]!r} is not an entrypoint of the form package.module:function")
        return value
    if not _ZOO.match(value):
        raise DirectiveError("model", f"{value[:60]!r} is not a model name (lower-case letters, digits, '-', '_', '.')")
    return value


def _parse_lr(value: str | None, scale: str | None, gpus: tuple[int, ...]) -> tuple[tuple[tuple[int, float], ...] | None, Literal["linear", "sqrt"] | None]:
    if value is None:
        if scale is not None:
            raise DirectiveError("lr-scale", "needs lr=VALUE@N")
        return None, None
    entries: dict[int, float] = {}
    for item in value.split(","):
        rate_s, at, count_s = item.partition("@")
        if not at:
            raise DirectiveError("lr", f"{item[:40]!r} must be VALUE@GPUS, e.g. 0.1@8")
        if not _LR_VALUE.match(rate_s):
            raise DirectiveError("lr", f"{rate_s[:40]!r} is not a learning rate")
        rate = float(rate_s)
        if not (0.0 < rate <= MAX_LR) or not math.isfinite(rate):
            raise DirectiveError("lr", f"{rate_s} is outside (0, {MAX_LR:g}]")
        count = _bounded_int("lr", count_s, 1, MAX_GPUS)
        if count in entries:
            raise DirectiveError("lr", f"two learning rates for {count} GPUs")
        entries[count] = rate
    if len(entries) > 1:
        if scale is not None:
            raise DirectiveError("lr-scale", "applies only to a single lr=VALUE@N")
        missing = [g for g in gpus if g not in entries]
        extra = [g for g in entries if g not in gpus]
        if missing:
            raise DirectiveError("lr", f"no learning rate for {missing[0]} GPUs (give one for every count in gpus, or a single lr=VALUE@N)")
        if extra:
            raise DirectiveError("lr", f"{extra[0]} GPUs is not one of the counts in gpus")
        return tuple(sorted(entries.items())), None
    if scale is not None and scale not in ("linear", "sqrt"):
        raise DirectiveError("lr-scale", f"{scale[:40]!r} is not one of linear, sqrt")
    return tuple(entries.items()), ("linear" if scale is None else scale)  # type: ignore[return-value]
