"""Validation messages name the field and the bound that failed, on one line (hops_slurm/validation.py):
never pydantic's header (``1 validation error for tagged-union[...]``), which names neither."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from hops_slurm.validation import one_line, reason
from profiler.records import parse_record


def _runtime(**over: object) -> str:
    rec = {"kind": "runtime", "signature": "s", "gpu_type": "a100", "node": "n1", "gpus": 2, "nodes": 1, "batch_size": 8,
           "steps": 10, "window_seconds": 2.0, "throughput": 80.0, "data_times": [], "sync_waits": [], "step_times": []}
    rec.update(over)
    return json.dumps(rec)


@pytest.mark.parametrize(("over", "expected"), [
    ({"gpus": 2048, "throughput": 81920.0}, "runtime.gpus: Input should be less than or equal to 1024 (got 2048)"),
    ({"window_seconds": 86401.0}, "runtime.window_seconds: Input should be less than or equal to 86400 (got 86401.0)"),
    ({"data_times": [0.1] * 100_001}, "runtime.data_times: List should have at most 100000 items after validation"),
    ({"node": "x" * 300}, "runtime.node: String should have at most 256 characters (got 'xxxx"),
    ({"throughput": 1.0}, "runtime: throughput 1 samples/s disagrees with steps x batch x gpus / window = 80"),
    ({"kind": "alien"}, "(top level): Input tag 'alien' found using 'kind' does not match any of the expected tags"),
])
def test_a_refused_record_names_its_field_and_bound(over: dict[str, object], expected: str) -> None:
    with pytest.raises(ValidationError) as err:
        parse_record(_runtime(**over))
    text = one_line(err.value)
    assert text.startswith(expected), text
    assert "\n" not in text and "validation error" not in text and len(text) < 420


def test_more_problems_are_counted_and_other_errors_give_their_first_line() -> None:
    with pytest.raises(ValidationError) as err:
        parse_record(_runtime(gpus=0, nodes=0, steps=0))
    assert one_line(err.value).endswith("(and 2 more)")
    assert reason(ValueError("first\nsecond")) == "first" and reason(KeyError()) == "KeyError"
