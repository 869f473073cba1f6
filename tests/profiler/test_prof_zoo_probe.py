"""Real CPU probes of zoo models, and the zoo's architectures against their published sizes."""

from __future__ import annotations

import pytest
import torch

from profiler.probe import run_probe
from profiler.records import ProbeResult, parse_record
from profiler.signature import job_signature
from profiler.zoo import build_zoo_job, zoo_model

# Parameter counts of the reference implementations (torchvision for the CNNs and ViT-B/16,
# Hugging Face GPT2Model + tied LM head for GPT-2 small).
PUBLISHED = {
    ("resnet18", "full"): 11_689_512,
    ("resnet50", "full"): 25_557_032,
    ("vgg11", "full"): 132_863_336,
    ("mobilenetv2", "full"): 3_504_872,
    ("vit", "full"): 86_567_656,
    ("gpt2", "full"): 124_439_808,
}


@pytest.mark.parametrize(("name", "size"), list(PUBLISHED))
def test_full_sizes_match_published_parameter_counts(name: str, size: str) -> None:
    with torch.device("meta"):
        model = zoo_model(name, size)
    assert sum(p.numel() for p in model.parameters()) == PUBLISHED[(name, size)]


@pytest.mark.parametrize("name", ["resnet18", "mobilenetv2", "vit", "bert", "gpt2"])
def test_tiny_cpu_probe(name: str) -> None:
    job = build_zoo_job(name, "tiny")
    expected_params = sum(p.numel() for p in job.model.parameters())
    result = run_probe(job, size="tiny", iterations=10, warmup=1, device="cpu")
    assert isinstance(result, ProbeResult)
    assert result.params == expected_params
    assert result.signature == job_signature(name, expected_params, job.batch_size, job.input_shape)
    assert (result.gpu_type, result.device, result.timing) == ("cpu", "cpu", "wall_clock_sync")
    assert len(result.forward_samples) == len(result.backward_samples) == len(result.update_samples) == 10
    assert all(t > 0 for t in result.forward_samples + result.backward_samples + result.update_samples)
    assert result.t_forward > 0 and result.t_backward > 0 and result.t_update > 0
    # In-memory synthetic batches: data time is tiny next to the computation, so the pattern is not decidable.
    assert result.t_data < 0.05 * result.t_compute
    assert not result.pattern_determined
    assert result.peak_memory_bytes > 0
    assert parse_record(result.model_dump_json()) == result


def test_probe_trains_the_model() -> None:
    job = build_zoo_job("resnet18", "tiny")
    before = [p.detach().clone() for p in job.model.parameters()]
    run_probe(job, iterations=2, warmup=0, device="cpu")
    assert any(not torch.equal(a, b.detach()) for a, b in zip(before, job.model.parameters()))


def test_unknown_model_and_size() -> None:
    with pytest.raises(KeyError, match="known: resnet18"):
        build_zoo_job("alexnet")
    with pytest.raises(KeyError, match="unknown size"):
        build_zoo_job("resnet18", "huge")
