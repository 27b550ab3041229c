"""attn check FILE --against model: a learner's attention, loaded with a real layer's weights
as the book loads them (GPT-2's fused c_attn in its next chapter, a Llama's projections and
rotary positions in its Llama chapter), checked stage by stage against that layer.

Tiny GPT-2, Llama (grouped-query) and Qwen2 (q/k/v biases) checkpoints are built here with
random weights and ``save_pretrained`` (nothing downloads). The reference is checked against
transformers' own computation (the layer's ``output_attentions``, its rotary rotation and its
attention module's output); the learner files are in ``tests/learner/real_model/``: the book's
attention loaded right, and each mistake learners make there."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

transformers = pytest.importorskip("transformers")

from tracer import Variant  # noqa: E402
from tracer.learner.check import judge  # noqa: E402
from tracer.tracing import Trace  # noqa: E402
from tracer.tracing.runner import TraceOptions, start_trace  # noqa: E402

Attn = Callable[..., tuple[int, str, str]]
FILES = Path(__file__).parents[1] / "learner" / "real_model"
WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "to", "big", "red"]
TEXT = "the cat sat on the mat the cat sat"
LAYER = 1


def _word_tokenizer():
    from tokenizers import Tokenizer, pre_tokenizers
    from tokenizers.models import WordLevel

    made = Tokenizer(WordLevel({w: i for i, w in enumerate([*WORDS, "[UNK]"])}, unk_token="[UNK]"))
    made.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return transformers.PreTrainedTokenizerFast(tokenizer_object=made, unk_token="[UNK]")


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two layers, 16 wide, four heads; weights and biases large enough that every mistake
    changes the output well beyond the check's tolerance."""
    torch.manual_seed(0)
    tokenizer = _word_tokenizer()
    config = transformers.GPT2Config(
        vocab_size=len(tokenizer), n_positions=64, n_embd=16, n_layer=2, n_head=4
    )
    model = transformers.GPT2LMHeadModel(config)
    with torch.no_grad():
        for block in model.transformer.h:
            block.attn.c_attn.weight.normal_(0, 0.5)
            block.attn.c_attn.bias.normal_(0, 0.5)
            block.attn.c_proj.bias.normal_(0, 0.5)
    path = tmp_path_factory.mktemp("checkpoints") / "gpt2"
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def llamas(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Llama with two key/value heads for four query heads, and Qwen2 with q/k/v biases."""
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("llamas")
    sizes: dict[str, Any] = dict(
        vocab_size=len(WORDS) + 1, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, head_dim=4,
    )  # fmt: skip
    made = {}
    for kind, model in (
        ("llama", transformers.LlamaForCausalLM(transformers.LlamaConfig(**sizes))),
        ("qwen2", transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**sizes))),
    ):
        with torch.no_grad():
            for layer in model.model.layers:
                attention = layer.self_attn
                for proj in (
                    attention.q_proj,
                    attention.k_proj,
                    attention.v_proj,
                    attention.o_proj,
                ):
                    proj.weight.normal_(0, 0.5)
                    if proj.bias is not None:
                        proj.bias.normal_(0, 0.5)
        model.save_pretrained(folder / kind)
        _word_tokenizer().save_pretrained(folder / kind)
        made[kind] = folder / kind
    return made


def checked(path: Path, **options: Any) -> Trace:
    options = {"model": str(path), "layer": LAYER, **options}
    return start_trace("model", TraceOptions(text=TEXT, options=options), check=True).run_to_end()


def judged(path: Path, name: str) -> Any:
    base = TraceOptions(text=TEXT, options={"model": str(path), "layer": LAYER})

    def rerun(changes: dict[str, Any]) -> Trace:
        options = TraceOptions(**{**base.__dict__, **changes})
        return start_trace("model", options, check=True).run_to_end()

    return judge(FILES / name, rerun({}), rerun)


def test_the_reference_is_the_real_layer(gpt2: Path) -> None:
    """Every head's weights equal transformers' output_attentions, and the output equals the
    layer's attention module run by transformers on the layer's normed input."""
    trace = checked(gpt2)
    tokenizer = transformers.AutoTokenizer.from_pretrained(gpt2)
    model = transformers.AutoModelForCausalLM.from_pretrained(gpt2, attn_implementation="eager")
    model.eval()
    ids = torch.tensor([tokenizer(TEXT)["input_ids"]])
    block = model.transformer.h[LAYER]
    seen: list[torch.Tensor] = []
    hook = block.attn.register_forward_hook(lambda module, args, output: seen.append(output[0]))
    with torch.no_grad():
        out = model(input_ids=ids, output_attentions=True, output_hidden_states=True)
        x = block.ln_1(out.hidden_states[LAYER])
    hook.remove()
    attention_output = seen[0][0]
    given = trace.stage("given").tensors
    torch.testing.assert_close(given["inputs"], x[0], atol=1e-6, rtol=0)
    torch.testing.assert_close(given["c_attn_weight"], block.attn.c_attn.weight)
    assert int(given["num_heads"]) == 4
    weights = trace.stage("weights").tensors["weights"]
    torch.testing.assert_close(weights, out.attentions[LAYER][0], atol=1e-5, rtol=0)
    torch.testing.assert_close(trace.output, attention_output, atol=1e-5, rtol=0)
    # The queries are c_attn's first third, split into heads of 4 columns.
    queries = trace.stage("split").tensors["queries"]
    expected = (x[0] @ block.attn.c_attn.weight[:, :16] + block.attn.c_attn.bias[:16]).view(
        -1, 4, 4
    )
    torch.testing.assert_close(queries, expected.transpose(0, 1), atol=1e-5, rtol=0)


@pytest.mark.parametrize("kind", ["llama", "qwen2"])
def test_the_reference_of_a_llama_is_the_real_layer(llamas: dict[str, Path], kind: str) -> None:
    """Weights, rotated queries and keys (by transformers' own apply_rotary_pos_emb) and the
    output equal transformers' computation of the layer."""
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    path = llamas[kind]
    trace = checked(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager")
    model.eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    ids = torch.tensor([tokenizer(TEXT)["input_ids"]])
    layer = model.model.layers[LAYER]
    seen: dict[str, Any] = {}

    def before(module: Any, args: Any, kwargs: dict[str, Any]) -> None:
        seen["x"], seen["rotary"] = kwargs["hidden_states"], kwargs["position_embeddings"]

    hooks = [
        layer.self_attn.register_forward_pre_hook(before, with_kwargs=True),
        layer.self_attn.register_forward_hook(lambda m, a, out: seen.update(out=out[0])),
    ]
    with torch.no_grad():
        out = model(input_ids=ids, output_attentions=True)
    for hook in hooks:
        hook.remove()
    attention, x = layer.self_attn, seen["x"]
    q = attention.q_proj(x).view(1, -1, 4, 4).transpose(1, 2)
    k = attention.k_proj(x).view(1, -1, 2, 4).transpose(1, 2)
    q, k = apply_rotary_pos_emb(q, k, *seen["rotary"])
    rotated = trace.stage("rotated").tensors
    torch.testing.assert_close(rotated["queries"], q[0], atol=1e-5, rtol=0)
    torch.testing.assert_close(rotated["keys"], k[0], atol=1e-5, rtol=0)
    weights = trace.stage("weights").tensors["weights"]
    torch.testing.assert_close(weights, out.attentions[LAYER][0], atol=1e-5, rtol=0)
    torch.testing.assert_close(trace.output, seen["out"][0], atol=1e-5, rtol=0)
    given = trace.stage("given").tensors
    assert int(given["kv_heads"]) == 2
    assert ("q_proj_bias" in given) == (kind == "qwen2")


def test_without_check_the_variant_shows_one_head_in_transformers_own_code(gpt2: Path) -> None:
    trace = start_trace(
        "model", TraceOptions(text=TEXT, options={"model": str(gpt2), "layer": LAYER})
    ).run_to_end()
    assert "given" not in {s.name for s in trace.stages}
    assert trace.stage("weights").tensors["weights"].dim() == 2


def test_the_book_loading_passes(gpt2: Path) -> None:
    judgement = judged(gpt2, "gpt2_book.py")
    assert judgement.matches, judgement.first.diagnoses
    assert judgement.first.called == "function attention"


def _line(name: str, number: int | None) -> str:
    assert number is not None
    return (FILES / name).read_text().splitlines()[number - 1]


@pytest.mark.parametrize(
    "name, code, words, at",
    [
        ("gpt2_split_order.py", "qkv-order", "k, q, v instead of q, k, v", "= torch.split(c_attn_"),
        ("gpt2_not_transposed.py", "conv1d-layout", "c_attn's weights transposed", "self.W_key(x)"),
        ("gpt2_head_split.py", "head-split", "without the transpose", "view(b, self.num_heads"),
        ("gpt2_no_mask.py", "mask-unused", "never applied", "torch.triu("),
    ],
)
def test_each_mistake_is_named_at_its_line(
    gpt2: Path, name: str, code: str, words: str, at: str
) -> None:
    judgement = judged(gpt2, name)
    assert not judgement.matches
    diagnosis = judgement.first.diagnoses[0]
    assert diagnosis.code == code
    assert words in diagnosis.title
    assert at in _line(name, diagnosis.line)


@pytest.mark.parametrize("kind", ["llama", "qwen2"])
def test_the_books_llama_attention_passes(llamas: dict[str, Path], kind: str) -> None:
    judgement = judged(llamas[kind], "llama_book.py")
    assert judgement.matches, judgement.first.diagnoses


@pytest.mark.parametrize(
    "name, code, words, at",
    [
        ("llama_keys_not_rotated.py", "rotary-unused", "keys not turned", "keys = keys.repeat_"),
        ("llama_repeat.py", "kv-repeat", "repeat instead of repeat_interleave", "keys.repeat("),
        ("llama_transposed.py", "linear-layout", "nn.Linear's (out, in)", "self.W_query(x)"),
        ("llama_rotate_sign.py", "rotary-direction", "the other way", "torch.cat((x2, -x1)"),
    ],
)
def test_each_llama_mistake_is_named_at_its_line(
    llamas: dict[str, Path], name: str, code: str, words: str, at: str
) -> None:
    judgement = judged(llamas["llama"], name)
    assert not judgement.matches
    diagnosis = judgement.first.diagnoses[0]
    assert diagnosis.code == code
    assert words in diagnosis.title
    assert at in _line(name, diagnosis.line)


def test_a_mistake_in_the_output_projection_alone(gpt2: Path, tmp_path: Path) -> None:
    """c_proj used as nn.Linear's layout, written as a function with ``x @ W``."""
    source = (FILES / "gpt2_book.py").read_text()
    wrong = source.replace("c_proj_weight.T)", "c_proj_weight)")
    assert wrong != source
    path = tmp_path / "out_proj.py"
    path.write_text(wrong)
    judgement = judge(path, checked(gpt2), lambda changes: checked(gpt2))
    diagnosis = judgement.first.diagnoses[0]
    assert diagnosis.code == "conv1d-layout" and diagnosis.title.startswith("c_proj's")


def test_the_cli_says_it_in_one_line(gpt2: Path, attn: Attn) -> None:
    status, out, _ = attn(
        "check", str(FILES / "gpt2_no_mask.py"), "--against", "model",
        "-o", f"model={gpt2}", "-o", f"layer={LAYER}", "--text", TEXT,
    )  # fmt: skip
    assert status == 1
    assert "gpt2_no_mask.py:20" in out
    assert "[mask-unused]" in out


def test_another_architecture_is_one_line(tmp_path: Path, attn: Attn) -> None:
    """Gemma 2 (its own score scale, softcapping): the model variant steps through it, the
    check does not."""
    config = transformers.Gemma2Config(
        vocab_size=12, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, head_dim=4,
    )  # fmt: skip
    transformers.Gemma2ForCausalLM(config).save_pretrained(tmp_path / "gemma2")
    _word_tokenizer().save_pretrained(tmp_path / "gemma2")
    status, _, err = attn(
        "check", str(FILES / "llama_book.py"), "--against", "model",
        "-o", f"model={tmp_path / 'gemma2'}", "--text", "the cat",
    )  # fmt: skip
    assert status == 2
    assert "is a 'gemma2' model; attn check compares your attention with the layers of " in err
    assert "gpt2, llama, mistral, qwen2 models" in err
    assert len(err.strip().splitlines()) == 1


def test_the_shipped_model_is_the_default(attn: Attn) -> None:
    """The docs' command: the book's Llama attention against the shipped model, offline."""
    status, out, err = attn("check", str(FILES / "llama_book.py"), "--against", "model")
    assert status == 0, out + err
    assert "your output matches 'model'" in out


def test_a_missing_model_is_one_line(attn: Attn, tmp_path: Path) -> None:
    status, _, err = attn(
        "check", str(FILES / "gpt2_book.py"), "--against", "model",
        "-o", f"model={tmp_path / 'nothing'}", "--text", "the cat",
    )  # fmt: skip
    assert status == 2
    assert "was not found" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "option, expected",
    [("layer=2", "-o layer=2 is out of range"), ("head=4", "-o head=4 is out of range")],
)
def test_a_layer_or_head_out_of_range_is_one_line(
    gpt2: Path, attn: Attn, option: str, expected: str
) -> None:
    status, _, err = attn(
        "check", str(FILES / "gpt2_book.py"), "--against", "model",
        "-o", f"model={gpt2}", "-o", option, "--text", "the cat",
    )  # fmt: skip
    assert status == 2
    assert expected in err
    assert len(err.strip().splitlines()) == 1


def test_a_module_alone_is_told_the_calling_convention(gpt2: Path, attn: Attn) -> None:
    book = Path(__file__).parents[1] / "learner" / "realistic" / "book_multihead.py"
    status, _, err = attn(
        "check", str(book), "--against", "model", "-o", f"model={gpt2}", "--text", TEXT
    )
    assert status == 2
    assert "write def attention(inputs, c_attn_weight, c_attn_bias, c_proj_weight" in err
    assert len(err.strip().splitlines()) == 1


def test_checked_with_must_be_a_variant() -> None:
    with pytest.raises(ValueError, match="checked_with= of variant 'x' must be a Variant"):
        Variant(name="x", title="x", run=lambda run: iter(()), stages=(), checked_with="y")  # type: ignore[arg-type]
