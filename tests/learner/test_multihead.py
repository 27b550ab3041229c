"""The multi-head variants against independent oracles.

- the course's two classes, re-implemented minimally here (same layer creation
  order under the seed), and the numbers the chapter prints;
- ``torch.nn.MultiheadAttention`` with our weights copied in, causal mask;
- a concatenation of ``scaled_dot_product_attention(is_causal=True)`` heads.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.learner.data.book import MULTIHEAD_CONTEXT, WRAPPER_CONTEXT
from tracer.inputs import InputSet, load_inputs
from tracer.plugin_host import PluginHost
from tracer.render.text import format_stage
from tracer.tracing import Trace
from tracer.tracing.runner import TraceOptions, start_trace

Attn = Callable[..., tuple[int, str, str]]


def run(host: PluginHost, variant: str, **options: object) -> Trace:
    heads = options.pop("heads", None)
    extra = {} if heads is None else {"heads": heads}
    return start_trace(variant, TraceOptions(extra=extra, **options), host).run_to_end()  # type: ignore[arg-type]


# The course's classes, minimal: causal, no dropout, batch-first.
class BookCausalHead(nn.Module):
    def __init__(self, d_in: int, d_out: int) -> None:
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        n = x.shape[1]
        scores = q @ k.transpose(1, 2)
        scores = scores.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool), 1), -torch.inf)
        return torch.softmax(scores / k.shape[-1] ** 0.5, dim=-1) @ v


class BookWrapper(nn.Module):
    def __init__(self, d_in: int, d_out: int, num_heads: int) -> None:
        super().__init__()
        self.heads = nn.ModuleList(BookCausalHead(d_in, d_out) for _ in range(num_heads))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([head(x) for head in self.heads], dim=-1)


class BookMultiHead(nn.Module):
    def __init__(self, d_in: int, d_out: int, num_heads: int) -> None:
        super().__init__()
        self.heads, self.head_dim, self.d_out = num_heads, d_out // num_heads, d_out
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)
        self.out_proj = nn.Linear(d_out, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, n, self.heads, self.head_dim).transpose(1, 2)

        q, k, v = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
        scores = q @ k.transpose(2, 3)
        scores = scores.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool), 1), -torch.inf)
        weights = torch.softmax(scores / k.shape[-1] ** 0.5, dim=-1)
        context = (weights @ v).transpose(1, 2).contiguous().view(b, n, self.d_out)
        return self.out_proj(context)


def book_batch() -> torch.Tensor:
    inputs = torch.tensor(load_inputs("your-journey").embeddings, dtype=torch.float32)
    return torch.stack((inputs, inputs))


@pytest.mark.parametrize(
    ("variant", "book_class", "d_out", "heads"),
    [
        ("multihead-wrapper", BookWrapper, 2, 2),
        ("multihead-wrapper", BookWrapper, 3, 3),
        ("multihead", BookMultiHead, 2, 2),
        ("multihead", BookMultiHead, 6, 3),
    ],
)
def test_linear_init_reproduces_the_book_classes(
    host: PluginHost, variant: str, book_class: type[nn.Module], d_out: int, heads: int
) -> None:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(123)
        book = book_class(3, d_out, heads)
    expected = book(book_batch())[0].detach()
    trace = run(host, variant, init="linear", d_out=d_out, heads=heads)
    assert trace.output is not None
    torch.testing.assert_close(trace.output, expected, atol=1e-6, rtol=0)


@pytest.mark.parametrize(
    ("variant", "printed"),
    [("multihead-wrapper", WRAPPER_CONTEXT), ("multihead", MULTIHEAD_CONTEXT)],
)
def test_linear_init_prints_the_chapter_numbers(
    host: PluginHost, variant: str, printed: tuple[tuple[float, ...], ...]
) -> None:
    trace = run(host, variant, init="linear", d_out=2, heads=2)
    assert trace.output is not None
    torch.testing.assert_close(trace.output, torch.tensor(printed), atol=5e-5, rtol=0)


def inputs_of_width(width: int, tokens: int = 5, seed: int = 0) -> InputSet:
    generator = torch.Generator().manual_seed(seed)
    rows = torch.randn(tokens, width, generator=generator).tolist()
    return InputSet(
        name="random",
        tokens=tuple(f"t{i}" for i in range(tokens)),
        embeddings=tuple(tuple(row) for row in rows),
    )


@pytest.mark.parametrize(
    ("init", "d_out", "heads", "seed"),
    [("linear", 4, 2, 123), ("rand", 6, 3, 7), ("randn", 8, 4, 1), ("linear", 3, 1, 5)],
)
def test_multihead_matches_torch_multihead_attention(
    host: PluginHost, init: str, d_out: int, heads: int, seed: int
) -> None:
    # nn.MultiheadAttention's queries are as wide as its output, so d_in = d_out here.
    inputs = inputs_of_width(d_out, seed=seed)
    trace = run(host, "multihead", inputs=inputs, init=init, d_out=d_out, heads=heads, seed=seed)
    W = trace.stage("projections").tensors
    torch_mha = nn.MultiheadAttention(d_out, heads, bias=True, batch_first=True)
    with torch.no_grad():
        torch_mha.in_proj_weight.copy_(torch.cat([W["W_query"].T, W["W_key"].T, W["W_value"].T]))
        torch_mha.in_proj_bias.zero_()
        torch_mha.out_proj.weight.copy_(W["W_out"].T)
        torch_mha.out_proj.bias.copy_(W["b_out"])
    x = trace.context.inputs[None]
    n = x.shape[1]
    causal = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    expected, _ = torch_mha(x, x, x, attn_mask=causal, need_weights=False)
    assert trace.output is not None
    torch.testing.assert_close(trace.output, expected[0].detach(), atol=1e-5, rtol=0)


@pytest.mark.parametrize(
    ("init", "d_out", "heads"), [("rand", 2, 2), ("randn", 3, 4), ("linear", 1, 3)]
)
def test_wrapper_matches_concatenated_causal_sdpa_heads(
    host: PluginHost, init: str, d_out: int, heads: int
) -> None:
    trace = run(host, "multihead-wrapper", init=init, d_out=d_out, heads=heads)
    W = trace.stage("projections").tensors
    x = trace.context.inputs
    assert W["W_query"].shape == (heads, x.shape[1], d_out)
    expected = torch.cat(
        [
            F.scaled_dot_product_attention(
                x @ W["W_query"][h], x @ W["W_key"][h], x @ W["W_value"][h], is_causal=True
            )
            for h in range(heads)
        ],
        dim=-1,
    )
    assert trace.output is not None
    assert trace.output.shape == (x.shape[0], heads * d_out)
    torch.testing.assert_close(trace.output, expected, atol=1e-5, rtol=0)


def test_rand_init_gives_head_zero_the_masked_variants_weights(host: PluginHost) -> None:
    wrapper = run(host, "multihead-wrapper", init="rand", d_out=2, heads=3)
    single = run(host, "masked", init="rand", d_out=2)
    assert single.output is not None and wrapper.output is not None
    torch.testing.assert_close(wrapper.output[:, :2], single.output, atol=1e-6, rtol=0)


def test_weights_from_a_file_are_shared_out_among_heads(host: PluginHost) -> None:
    base = inputs_of_width(3, tokens=4, seed=3)
    generator = torch.Generator().manual_seed(9)
    weights = {
        name: tuple(tuple(r) for r in torch.randn(3, 4, generator=generator).tolist())
        for name in ("query", "key", "value")
    }
    inputs = InputSet(name="file", tokens=base.tokens, embeddings=base.embeddings, weights=weights)
    wrapper = run(host, "multihead-wrapper", inputs=inputs, heads=2)
    split = run(host, "multihead", inputs=inputs, heads=2)
    # Identity output projection: the split version's heads equal the wrapper's column halves.
    assert wrapper.output is not None and split.output is not None
    assert wrapper.output.shape == split.output.shape == (4, 4)
    torch.testing.assert_close(wrapper.output, split.output, atol=1e-6, rtol=0)
    q = torch.tensor(weights["query"])
    torch.testing.assert_close(wrapper.stage("projections").tensors["W_query"][1], q[:, 2:])


def test_per_head_stages_and_focused_queries(host: PluginHost) -> None:
    trace = run(host, "multihead", init="linear", d_out=6, heads=3)
    assert trace.stage("split").tensors["queries"].shape == (3, 6, 2)
    assert trace.stage("weights").tensors["weights"].shape == (3, 6, 6)
    focused = run(host, "multihead", init="linear", d_out=6, heads=3, query=4)
    assert focused.stage("weights").tensors["weights"].shape == (3, 6)
    assert focused.output is not None and trace.output is not None
    torch.testing.assert_close(focused.output, trace.output[4])


def test_plain_text_pages_through_heads(host: PluginHost) -> None:
    trace = run(host, "multihead-wrapper", init="linear", d_out=2, heads=2)
    text = format_stage(trace.stage("weights"), trace, len(trace.variant.stages))
    assert "weights (2×6×6: head × query × key)" in text
    first, second = text.split("\n[head 0]\n")[1].split("\n[head 1]\n")
    head0, head1 = trace.stage("weights").tensors["weights"]
    # Each page is one head's 6×6 table, with the tokens as row labels.
    assert first.splitlines()[1].split()[1:] == [f"{v:.4f}" for v in head0[0].tolist()]
    assert second.splitlines()[6].split()[1:] == [f"{v:.4f}" for v in head1[5].tolist()]


def test_d_out_not_divisible_by_heads_is_one_line_usage_error(attn: Attn) -> None:
    status, _, err = attn("trace", "multihead", "--d-out", "3", "--heads", "2")
    assert status == 2
    assert err.strip().splitlines() == [
        "attn: --d-out 3 is not divisible by --heads 2: multihead splits d_out into 2 equal "
        "heads (try --d-out 2 or 4)"
    ]


@pytest.mark.parametrize("variant", ["multihead", "multihead-wrapper"])
def test_zero_heads_is_a_usage_error(attn: Attn, variant: str) -> None:
    status, _, err = attn("trace", variant, "--heads", "0")
    assert status == 2
    assert err.strip() == "attn: --heads must be at least 1, got 0"


def test_heads_option_reaches_the_variant(attn: Attn) -> None:
    status, out, _ = attn("trace", "multihead-wrapper", "--heads", "3", "--init", "linear")
    assert status == 0
    assert "output (6×6: query × feature)" in out


@pytest.mark.parametrize("variant", ["multihead", "multihead-wrapper"])
def test_file_weights_that_heads_cannot_split(attn: Attn, variant: str) -> None:
    # four-words has 3-column weights (seed 004); --d-out cannot change them, --heads can.
    status, _, err = attn("trace", variant, "--inputs", "four-words")
    assert status == 2
    assert err == (
        "attn: the inputs file's weights have d_out = 3, which --heads 2 cannot split into "
        "equal heads; use --heads 1 or 3\n"
    )
    status, out, _ = attn("trace", variant, "--inputs", "four-words", "--heads", "3")
    assert status == 0 and "output (4×3: query × feature)" in out
