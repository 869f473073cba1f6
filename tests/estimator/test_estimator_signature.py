"""Job signatures: a re-submitted model finds its earlier measurements."""

from __future__ import annotations

import pytest

from estimator.signature import job_signature


def test_same_model_and_batch_share_a_signature():
    a = job_signature("ResNet-50", 64, {"dataset": "imagenet"})
    assert a == job_signature(" resnet-50 ", 64, {"dataset": "imagenet"})
    assert a.startswith("resnet-50-b64-")


def test_batch_size_and_extra_traits_distinguish():
    base = job_signature("ResNet-50", 64)
    assert job_signature("ResNet-50", 32) != base
    assert job_signature("ResNet-50", 64, {"precision": "fp16"}) != base
    assert job_signature("ResNet-18", 64) != base


@pytest.mark.parametrize("model,batch", [("", 1), ("x", 0)])
def test_rejects_empty_model_or_bad_batch(model, batch):
    with pytest.raises(ValueError):
        job_signature(model, batch)
