"""The built-in model zoo the probe runner builds jobs from (plain PyTorch, no torchvision).

Each entry builds a :class:`profiler.job.ProbeJob`: the model, a loader of synthetic batches kept in
memory, an SGD optimizer and the loss. Three size settings:

* ``tiny``: narrow, shallow and small inputs, so a CPU probe takes about a second (tests);
* ``default``: the real architectures' widths and depths for the CNNs, reduced transformer
  dimensions and small inputs, so a CPU probe stays well under a minute (benchmark);
* ``full``: the published sizes and inputs (224x224 images, GPT-2 small, BERT-base), meant for GPUs.

Architectures follow the original papers: ResNet (He et al. 2016), VGG (Simonyan & Zisserman 2015),
MobileNetV2 (Sandler et al. 2018), ViT (Dosovitskiy et al. 2021), BERT (Devlin et al. 2019),
GPT-2 (Radford et al. 2019).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from profiler.job import ProbeJob

SIZES = ("tiny", "default", "full")


# --------------------------------------------------------------------------- CNNs
class _BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, width, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.short = _shortcut(cin, width, stride)

    def forward(self, x: Tensor) -> Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + self.short(x))


class _Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        out = width * 4
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.short = _shortcut(cin, out, stride)

    def forward(self, x: Tensor) -> Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        y = torch.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return torch.relu(y + self.short(x))


def _shortcut(cin: int, cout: int, stride: int) -> nn.Module:
    if stride == 1 and cin == cout:
        return nn.Identity()
    return nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))


class ResNet(nn.Module):
    def __init__(self, block: type[_BasicBlock] | type[_Bottleneck], layers: list[int], base: int, classes: int) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, base, 7, 2, 3, bias=False), nn.BatchNorm2d(base), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)
        )
        stages: list[nn.Module] = []
        cin = base
        for i, n in enumerate(layers):
            width = base * 2**i
            for j in range(n):
                stages.append(block(cin, width, 2 if (j == 0 and i > 0) else 1))
                cin = width * block.expansion
        self.stages = nn.Sequential(*stages)
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes))

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.stages(self.stem(x)))


class VGG(nn.Module):
    def __init__(self, cfg: list[int | str], hidden: int, pool: int, classes: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        cin = 3
        for v in cfg:
            if v == "M":
                layers.append(nn.MaxPool2d(2))
            else:
                assert isinstance(v, int)
                layers += [nn.Conv2d(cin, v, 3, padding=1), nn.ReLU(inplace=True)]
                cin = v
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(pool)
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(cin * pool * pool, hidden), nn.ReLU(inplace=True), nn.Dropout(),
            nn.Linear(hidden, hidden), nn.ReLU(inplace=True), nn.Dropout(), nn.Linear(hidden, classes),
        )

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(self.pool(self.features(x)))


class _InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = cin * expand
        layers: list[nn.Module] = []
        if expand != 1:
            layers += [nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(inplace=True)]
        layers += [
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(inplace=True),
            nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout),
        ]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: Tensor) -> Tensor:
        y = self.body(x)
        return x + y if self.residual else y


class MobileNetV2(nn.Module):
    # (expansion t, channels c, repeats n, stride s) from Table 2 of the MobileNetV2 paper.
    SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]

    def __init__(self, width: float, classes: int) -> None:
        super().__init__()

        def ch(c: int) -> int:
            return max(8, int(round(c * width / 8)) * 8)

        cin = ch(32)
        layers: list[nn.Module] = [nn.Conv2d(3, cin, 3, 2, 1, bias=False), nn.BatchNorm2d(cin), nn.ReLU6(inplace=True)]
        for t, c, n, s in self.SETTINGS:
            for i in range(n):
                layers.append(_InvertedResidual(cin, ch(c), s if i == 0 else 1, t))
                cin = ch(c)
        last = max(1280, ch(1280)) if width > 1.0 else ch(1280)
        layers += [nn.Conv2d(cin, last, 1, bias=False), nn.BatchNorm2d(last), nn.ReLU6(inplace=True)]
        self.features = nn.Sequential(*layers)
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(last, classes))

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.features(x))


# --------------------------------------------------------------------------- transformers
def _encoder(dim: int, depth: int, heads: int, dropout: float = 0.1) -> nn.TransformerEncoder:
    layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout, activation="gelu", batch_first=True, norm_first=True)
    return nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)


class ViT(nn.Module):
    def __init__(self, image: int, patch: int, dim: int, depth: int, heads: int, classes: int) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, patch)
        tokens = (image // patch) ** 2
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, tokens + 1, dim) * 0.02)
        self.encoder = _encoder(dim, depth, heads)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x: Tensor) -> Tensor:
        t = self.patch(x).flatten(2).transpose(1, 2)
        t = torch.cat([self.cls.expand(t.shape[0], -1, -1), t], dim=1) + self.pos
        return self.head(self.norm(self.encoder(t))[:, 0])


class TextTransformer(nn.Module):
    """BERT-style encoder (``causal=False``, masked-token objective) or GPT-2-style decoder
    (``causal=True``, next-token objective; the LM head shares the token embedding as in GPT-2)."""

    def __init__(self, vocab: int, seq: int, dim: int, depth: int, heads: int, causal: bool) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(1, seq, dim) * 0.02)
        self.encoder = _encoder(dim, depth, heads)
        self.norm = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.tok.weight
        self.causal = causal
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq) if causal else None, persistent=False)

    def forward(self, ids: Tensor) -> Tensor:
        h = self.tok(ids) + self.pos[:, : ids.shape[1]]
        mask = self.mask[: ids.shape[1], : ids.shape[1]] if self.causal else None
        h = self.encoder(h, mask=mask, is_causal=self.causal)
        return self.lm_head(self.norm(h))


# --------------------------------------------------------------------------- data and registry
class SyntheticLoader:
    """An endless loader over a small pool of synthetic batches kept in memory (like a warm page cache)."""

    def __init__(self, make_batch: Callable[[torch.Generator], tuple[Tensor, Tensor]], pool: int = 4, seed: int = 0) -> None:
        gen = torch.Generator().manual_seed(seed)
        self.batches = [make_batch(gen) for _ in range(pool)]

    def __iter__(self) -> Iterator[tuple[Tensor, Tensor]]:
        i = 0
        while True:
            yield self.batches[i % len(self.batches)]
            i += 1


def _lm_loss(logits: Tensor, target: Tensor) -> Tensor:
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))


@dataclass(frozen=True)
class _Spec:
    kind: str  # "image" or "text"
    build: Callable[[dict[str, Any]], nn.Module]
    sizes: dict[str, dict[str, Any]]


def _img(**kw: Any) -> dict[str, Any]:
    return kw


_CLASSES_FULL = 1000

ZOO: dict[str, _Spec] = {
    "resnet18": _Spec("image", lambda k: ResNet(_BasicBlock, k["layers"], k["base"], k["classes"]), {
        "tiny": _img(layers=[1, 1, 1, 1], base=8, classes=10, image=32, batch=4),
        "default": _img(layers=[2, 2, 2, 2], base=64, classes=_CLASSES_FULL, image=64, batch=16),
        "full": _img(layers=[2, 2, 2, 2], base=64, classes=_CLASSES_FULL, image=224, batch=64),
    }),
    "resnet50": _Spec("image", lambda k: ResNet(_Bottleneck, k["layers"], k["base"], k["classes"]), {
        "tiny": _img(layers=[1, 1, 1, 1], base=4, classes=10, image=32, batch=4),
        "default": _img(layers=[3, 4, 6, 3], base=64, classes=_CLASSES_FULL, image=64, batch=8),
        "full": _img(layers=[3, 4, 6, 3], base=64, classes=_CLASSES_FULL, image=224, batch=32),
    }),
    "vgg11": _Spec("image", lambda k: VGG(k["cfg"], k["hidden"], k["pool"], k["classes"]), {
        "tiny": _img(cfg=[8, "M", 16, "M", 32, 32, "M"], hidden=64, pool=1, classes=10, image=32, batch=4),
        "default": _img(cfg=[64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"], hidden=4096, pool=2,
                        classes=_CLASSES_FULL, image=64, batch=4),
        "full": _img(cfg=[64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"], hidden=4096, pool=7,
                     classes=_CLASSES_FULL, image=224, batch=32),
    }),
    "mobilenetv2": _Spec("image", lambda k: MobileNetV2(k["width"], k["classes"]), {
        "tiny": _img(width=0.25, classes=10, image=32, batch=4),
        "default": _img(width=1.0, classes=_CLASSES_FULL, image=64, batch=16),
        "full": _img(width=1.0, classes=_CLASSES_FULL, image=224, batch=64),
    }),
    "vit": _Spec("image", lambda k: ViT(k["image"], k["patch"], k["dim"], k["depth"], k["heads"], k["classes"]), {
        "tiny": _img(patch=8, dim=32, depth=2, heads=2, classes=10, image=32, batch=4),
        "default": _img(patch=8, dim=384, depth=6, heads=6, classes=_CLASSES_FULL, image=64, batch=16),
        "full": _img(patch=16, dim=768, depth=12, heads=12, classes=_CLASSES_FULL, image=224, batch=32),  # ViT-B/16
    }),
    "bert": _Spec("text", lambda k: TextTransformer(k["vocab"], k["seq"], k["dim"], k["depth"], k["heads"], causal=False), {
        "tiny": dict(vocab=500, seq=32, dim=32, depth=2, heads=2, batch=4),
        "default": dict(vocab=8000, seq=128, dim=256, depth=4, heads=4, batch=4),  # BERT-mini-like
        "full": dict(vocab=30522, seq=128, dim=768, depth=12, heads=12, batch=32),  # BERT-base
    }),
    "gpt2": _Spec("text", lambda k: TextTransformer(k["vocab"], k["seq"], k["dim"], k["depth"], k["heads"], causal=True), {
        "tiny": dict(vocab=500, seq=32, dim=32, depth=2, heads=2, batch=4),
        "default": dict(vocab=8000, seq=128, dim=320, depth=4, heads=4, batch=4),
        "full": dict(vocab=50257, seq=1024, dim=768, depth=12, heads=12, batch=8),  # GPT-2 small
    }),
}


def zoo_names() -> tuple[str, ...]:
    return tuple(ZOO)


def zoo_model(name: str, size: str = "default") -> nn.Module:
    """Only the model of zoo entry ``name`` at ``size`` (build it under ``torch.device("meta")`` to
    count parameters without allocating them)."""
    if name not in ZOO:
        raise KeyError(f"unknown zoo model {name!r}; known: {', '.join(ZOO)}")
    if size not in SIZES:
        raise KeyError(f"unknown size {size!r}; known: {', '.join(SIZES)}")
    return ZOO[name].build(ZOO[name].sizes[size])


def build_zoo_job(name: str, size: str = "default", *, batch_size: int | None = None, seed: int = 0) -> ProbeJob:
    """Build zoo model ``name`` at ``size`` (``tiny`` | ``default`` | ``full``) as a probe job.

    ``batch_size`` overrides the size setting's per-GPU batch size.
    """
    torch.manual_seed(seed)
    model = zoo_model(name, size)
    spec = ZOO[name]
    kw = spec.sizes[size]
    batch = int(batch_size or kw["batch"])
    if spec.kind == "image":
        image, classes = kw["image"], kw["classes"]
        input_shape: tuple[int, ...] = (3, image, image)

        def make(gen: torch.Generator) -> tuple[Tensor, Tensor]:
            return torch.randn(batch, 3, image, image, generator=gen), torch.randint(0, classes, (batch,), generator=gen)

        loss_fn: Callable[[Any, Any], Tensor] = nn.functional.cross_entropy
    else:
        seq, vocab = kw["seq"], kw["vocab"]
        input_shape = (seq,)
        causal = name == "gpt2"

        def make(gen: torch.Generator) -> tuple[Tensor, Tensor]:
            ids = torch.randint(0, vocab, (batch, seq + (1 if causal else 0)), generator=gen)
            if causal:  # next-token prediction
                return ids[:, :-1].contiguous(), ids[:, 1:].contiguous()
            return ids, ids.clone()  # masked-token objective over every position (masking left out)

        loss_fn = _lm_loss
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return ProbeJob(
        name=name, model=model, loader=SyntheticLoader(make, seed=seed), optimizer=optimizer, loss_fn=loss_fn,
        batch_size=batch, input_shape=input_shape,
    )
