"""The model zoo: the built-in inputs of the command line, also planned by the tests
(tests/test_end_to_end.py, tests/test_reports.py) and the benchmarks (bench/workloads.py).

Models need torch, imported when one is built; the synthetic graphs need numpy only.
Every model is built with ``torch.manual_seed(0)``, in eval mode, with its example inputs.

:data:`SCHEDULING_MODELS` are built-in inputs too, the graphs whose node order matters
(docs/exir.md, "Reordering"): a branchy CNN, a chain CNN and executorch's own llama with
a KV cache (``executorch.examples.models.llama``, so it needs executorch). They are not in
:data:`MODELS`, the set every zoo test plans, to keep those tests' time; the reorder's
tests and bench/reorder_models.py plan them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

__all__ = [
    "BUILTIN_INPUTS",
    "DEFAULT_INPUT",
    "MODELS",
    "SCHEDULING_MODELS",
    "SYNTHETIC_SIZES",
    "build_model",
    "example_calls",
]

# name -> what it is; each takes the options of its builder below.
MODELS: dict[str, str] = {
    "encoder": "transformer encoder, 2 layers, width 128, 64 tokens (the default)",
    "cnn": "CNN with a channel concat and slices (Cadence places them in place), 32x32 images",
    "depthwise-cnn": "depthwise, pointwise and transposed convolutions on 8x8 images",
    "mlp": "3-layer perceptron, 32 -> 64 -> 48 -> 10",
    "decoder": "decoder-only transformer with a KV cache, 2 layers, width 64, 32 cached tokens",
}
SCHEDULING_MODELS: dict[str, str] = {
    "inception": "inception-style CNN, 3 blocks of 4 parallel branches concatenated, 32x32 images",
    "chain-cnn": "chain of 6 convolutions with ReLU and pooling, 32x32 images",
    "llama": "executorch's llama with a KV cache (examples.models.llama), 2 layers, dim 64,"
    " 32 cached tokens",
}
SYNTHETIC_SIZES: dict[str, int] = {"synthetic": 10_000, "synthetic-100k": 100_000}
BUILTIN_INPUTS: dict[str, str] = {
    **MODELS,
    **SCHEDULING_MODELS,
    **{
        name: f"synthetic graph of {n:,} tensors (numpy only)"
        for name, n in SYNTHETIC_SIZES.items()
    },
}
DEFAULT_INPUT = "encoder"

Built = tuple["torch.nn.Module", tuple["torch.Tensor", ...]]


def _encoder(
    layers: int = 2, width: int = 128, tokens: int = 64, heads: int = 4, feedforward: int = 0
) -> Built:
    import torch

    layer = torch.nn.TransformerEncoderLayer(
        width, nhead=heads, dim_feedforward=feedforward or 2 * width, dropout=0.0,
        batch_first=True,
    )  # fmt: skip
    model = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
    return model, (torch.randn(1, tokens, width),)


def _cnn(image: int = 32) -> Built:
    import torch

    class CatAndSliceCnn(torch.nn.Module):
        """Concatenation and slicing along the outermost dims, so Cadence's cat and slice
        nops place tensors inside others (relative placements) in DEFAULT mode."""

        def __init__(self) -> None:
            super().__init__()
            self.left = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.right = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.mix = torch.nn.Conv2d(16, 8, 1)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            both = torch.cat([torch.relu(self.left(x)), torch.relu(self.right(x))], dim=1)
            mixed = self.mix(both)
            return mixed[:, :4] + mixed[:, 4:], torch.cat([mixed, mixed], dim=0)[1:2]

    return CatAndSliceCnn(), (torch.randn(1, 3, image, image),)


def _depthwise_cnn(image: int = 8) -> Built:
    import torch

    class DepthwiseAndTransposedCnn(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.depthwise = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
            self.pointwise = torch.nn.Conv2d(8, 16, 1)
            self.upsample = torch.nn.ConvTranspose2d(16, 4, 2, stride=2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            result: torch.Tensor = self.upsample(
                torch.relu(self.pointwise(torch.relu(self.depthwise(x))))
            )
            return result

    return DepthwiseAndTransposedCnn(), (torch.randn(1, 8, image, image),)


def _mlp(batch: int = 4) -> Built:
    import torch

    model = torch.nn.Sequential(
        torch.nn.Linear(32, 64),
        torch.nn.ReLU(),
        torch.nn.Linear(64, 48),
        torch.nn.ReLU(),
        torch.nn.Linear(48, 10),
    )
    return model, (torch.randn(batch, 32),)


def _decoder(
    layers: int = 2, width: int = 64, heads: int = 4, context: int = 32, vocabulary: int = 128
) -> Built:
    """One decoding step: the token at ``position`` attends to the keys and values cached
    in mutable buffers by the steps before it. A mask over the whole cache keeps every
    shape static and hides the entries not written yet (ExecuTorch leaves a mutable
    buffer's initial contents undefined)."""
    import torch

    head_width = width // heads

    class CachedAttentionLayer(torch.nn.Module):
        keys: torch.Tensor
        values: torch.Tensor

        def __init__(self) -> None:
            super().__init__()
            self.attention_norm = torch.nn.LayerNorm(width)
            self.qkv = torch.nn.Linear(width, 3 * width)
            self.projection = torch.nn.Linear(width, width)
            self.feedforward_norm = torch.nn.LayerNorm(width)
            self.up = torch.nn.Linear(width, 4 * width)
            self.down = torch.nn.Linear(4 * width, width)
            cache = torch.zeros(1, heads, context, head_width)
            self.register_buffer("keys", cache, persistent=False)
            self.register_buffer("values", cache.clone(), persistent=False)

        def forward(
            self, x: torch.Tensor, position: torch.Tensor, mask: torch.Tensor
        ) -> torch.Tensor:
            qkv = self.qkv(self.attention_norm(x)).view(1, 1, 3, heads, head_width)
            query, key, value = (part.transpose(1, 2) for part in qkv.unbind(2))
            self.keys.index_copy_(2, position, key)
            self.values.index_copy_(2, position, value)
            keys, values = (torch.where(mask, cache, 0.0) for cache in (self.keys, self.values))
            scores = query @ keys.transpose(2, 3) * head_width**-0.5
            attended = scores.masked_fill(~mask.mT, float("-inf")).softmax(-1) @ values
            x = x + self.projection(attended.transpose(1, 2).reshape(1, 1, width))
            up = torch.nn.functional.gelu(self.up(self.feedforward_norm(x)))
            result: torch.Tensor = x + self.down(up)
            return result

    class Decoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embedding = torch.nn.Embedding(vocabulary, width)
            self.layers = torch.nn.ModuleList(CachedAttentionLayer() for _ in range(layers))
            self.norm = torch.nn.LayerNorm(width)
            self.head = torch.nn.Linear(width, vocabulary)

        def forward(self, token: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
            mask = (torch.arange(context) <= position).view(context, 1)  # cached tokens
            x = self.embedding(token)
            for layer in self.layers:
                x = layer(x, position, mask)
            logits: torch.Tensor = self.head(self.norm(x))
            return logits

    # Inference only: exir's passes re-run the cache's in-place writes, which autograd
    # refuses for values computed from parameters that require grad (non-strict export).
    return Decoder().requires_grad_(False), (torch.tensor([[3]]), torch.tensor([0]))


def _inception(blocks: int = 3, width: int = 16, image: int = 32) -> Built:
    """GoogLeNet's inception blocks, small: each concatenates a 1x1, a 1x1-3x3, a
    1x1-5x5 and a pooled 1x1 branch, so the order of the branches decides how many of
    their tensors are alive at once."""
    import torch

    def conv(inputs: int, outputs: int, kernel: int) -> torch.nn.Module:
        return torch.nn.Sequential(
            torch.nn.Conv2d(inputs, outputs, kernel, padding=kernel // 2), torch.nn.ReLU()
        )

    class Block(torch.nn.Module):
        def __init__(self, inputs: int) -> None:
            super().__init__()
            self.one = conv(inputs, width, 1)
            self.three = torch.nn.Sequential(conv(inputs, width, 1), conv(width, 2 * width, 3))
            self.five = torch.nn.Sequential(conv(inputs, width // 2, 1), conv(width // 2, width, 5))
            self.pool = torch.nn.Sequential(
                torch.nn.MaxPool2d(3, stride=1, padding=1), conv(inputs, width, 1)
            )

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.cat([self.one(x), self.three(x), self.five(x), self.pool(x)], dim=1)

    channels = 5 * width
    model = torch.nn.Sequential(
        conv(3, channels, 3),
        *(Block(channels) for _ in range(blocks)),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(channels, 10),
    )
    return model, (torch.randn(1, 3, image, image),)


def _chain_cnn(layers: int = 6, image: int = 32) -> Built:
    import torch

    modules: list[torch.nn.Module] = []
    channels = 3
    for layer in range(layers):
        out = 8 * 2 ** (layer // 2)
        modules += [torch.nn.Conv2d(channels, out, 3, padding=1), torch.nn.ReLU()]
        if layer % 2:
            modules.append(torch.nn.MaxPool2d(2))
        channels = out
    model = torch.nn.Sequential(*modules, torch.nn.Flatten(), torch.nn.LazyLinear(10))
    inputs = (torch.randn(1, 3, image, image),)
    model(*inputs)  # sizes the lazy layer
    return model, inputs


def _llama(layers: int = 2, dim: int = 64, heads: int = 4, context: int = 32) -> Built:
    """executorch's example llama (``construct_transformer``) with its KV cache in mutable
    buffers, random weights, one token per call: ``(tokens, input_pos)``."""
    import torch
    from executorch.examples.models.llama.llama_transformer import construct_transformer
    from executorch.examples.models.llama.model_args import ModelArgs

    arguments = ModelArgs(
        dim=dim, n_layers=layers, n_heads=heads, vocab_size=128, max_seq_len=context,
        max_context_len=context, use_kv_cache=True, generate_full_logits=False,
        enable_dynamic_shape=False,
    )  # fmt: skip

    class TokenAndPosition(torch.nn.Module):
        """The transformer with its ``attn_options`` as a plain tensor argument."""

        def __init__(self) -> None:
            super().__init__()
            self.transformer = construct_transformer(arguments)

        def forward(self, tokens: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
            logits: torch.Tensor = self.transformer(tokens, {"input_pos": position})
            return logits

    return TokenAndPosition().requires_grad_(False), (torch.tensor([[1]]), torch.tensor([0]))


_BUILDERS: dict[str, Callable[..., Built]] = {
    "encoder": _encoder,
    "cnn": _cnn,
    "depthwise-cnn": _depthwise_cnn,
    "mlp": _mlp,
    "decoder": _decoder,
    "inception": _inception,
    "chain-cnn": _chain_cnn,
    "llama": _llama,
}
# The models whose calls carry state (a KV cache) from one to the next.
_DECODERS = ("decoder", "llama")


def build_model(name: str, **options: Any) -> Built:
    """``(model in eval mode, example inputs)`` for a name in :data:`MODELS`; ``options``
    go to its builder (e.g. ``build_model("encoder", layers=1, width=32, tokens=8)``)."""
    import torch

    if name not in _BUILDERS:
        raise ValueError(
            f"unknown model {name!r}; choose from {', '.join([*MODELS, *SCHEDULING_MODELS])}"
        )
    torch.manual_seed(0)  # random init weights and inputs, the same every run
    model, inputs = _BUILDERS[name](**options)
    return model.eval(), inputs


def example_calls(name: str, inputs: tuple[torch.Tensor, ...]) -> list[tuple[torch.Tensor, ...]]:
    """The calls to run a model of :data:`MODELS` or :data:`SCHEDULING_MODELS` on, in
    order, from its example inputs: four decoding steps for the decoders (their KV cache
    carries over from call to call), the example inputs once for the others."""
    import torch

    if name not in _DECODERS:
        return [inputs]
    token, _ = inputs
    return [(token + step, torch.tensor([step])) for step in range(4)]
