"""The #HOPS grammar against the shared test vectors (tests/data/directives), plus round trips."""

from __future__ import annotations

from pathlib import Path

import pytest

from hops_slurm.directives import HopsDirectives, parse_script
from hops_slurm.errors import DirectiveError

VECTORS = Path(__file__).resolve().parents[1] / "data" / "directives"
VALID = sorted((VECTORS / "valid").glob("*.sh"))
INVALID = sorted((VECTORS / "invalid").glob("*.sh"))


def _expect(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.with_suffix(".expect").read_text().splitlines() if line)


def test_there_are_at_least_30_vectors() -> None:
    assert len(VALID) + len(INVALID) >= 30
    assert len(VALID) >= 10 and len(INVALID) >= 20


@pytest.mark.parametrize("script", VALID, ids=lambda p: p.stem)
def test_valid_vector_has_its_canonical_form(script: Path) -> None:
    expected = script.with_suffix(".canonical").read_text().strip()
    parsed = parse_script(script.read_text())
    assert parsed is not None
    assert parsed.canonical() == expected
    # canonical -> model -> canonical is the identity
    assert HopsDirectives.from_canonical(expected) == parsed


@pytest.mark.parametrize("script", INVALID, ids=lambda p: p.stem)
def test_invalid_vector_names_the_key(script: Path) -> None:
    expect = _expect(script)
    with pytest.raises(DirectiveError) as err:
        parse_script(script.read_text())
    assert err.value.key == expect["key"]
    assert expect["contains"] in str(err.value)
    assert str(err.value).startswith(f"#HOPS {expect['key']}:")


def test_script_without_directives_is_not_a_hops_job() -> None:
    assert parse_script("#!/bin/bash\n#SBATCH -N1\nsrun hostname\n") is None


def test_comment_form_is_the_same_grammar() -> None:
    via_comment = parse_script("#!/bin/bash\nhostname\n", comment="hops:gpus=2,4 samples=1M batch-size=8 model=resnet18")
    via_lines = parse_script("#!/bin/bash\n#HOPS gpus=4,2 samples=1000K batch-size=8 model=resnet18\n")
    assert via_comment == via_lines


def test_comment_without_prefix_is_ignored() -> None:
    assert parse_script("#!/bin/bash\nhostname\n", comment="just a note") is None


@pytest.mark.parametrize(
    ("gpus_set", "lr_directive", "gpus", "lr"),
    [
        ("2,4,8", "lr=0.1@8", 2, 0.025),  # linear: 0.1 * 2/8
        ("2,4,8", "lr=0.1@8", 8, 0.1),
        ("4,16", "lr=0.1@4 lr-scale=sqrt", 16, 0.2),  # sqrt: 0.1 * sqrt(16/4)
        ("4,8", "lr=0.05@4,0.1@8", 4, 0.05),  # explicit
        ("4,8", "lr=0.05@4,0.1@8", 8, 0.1),
    ],
)
def test_learning_rate_scaling(gpus_set: str, lr_directive: str, gpus: int, lr: float) -> None:
    d = parse_script(f"#HOPS gpus={gpus_set} samples=1M batch-size=8 model=resnet18 {lr_directive}\n")
    assert d is not None
    assert d.lr_for(gpus) == pytest.approx(lr)


def test_no_learning_rate_means_none() -> None:
    d = parse_script("#HOPS gpus=1 samples=1M batch-size=8 model=resnet18\n")
    assert d is not None and d.lr_for(1) is None


def test_job_environment_learning_rate_hides_float_noise_and_keeps_given_digits() -> None:
    from hops_slurm.directives import format_lr

    d = parse_script("#HOPS gpus=3,8 samples=1M batch-size=8 model=resnet18 lr=0.1@8\n")
    assert d is not None and format_lr(d.lr_for(3)) == "0.0375"  # 0.1 * 3 / 8 is 0.037500000000000006 as a float
    e = parse_script("#HOPS gpus=4 samples=1M batch-size=8 model=resnet18 lr=0.123456789012345@4\n")
    assert e is not None and format_lr(e.lr_for(4)) == "0.123456789012345"
