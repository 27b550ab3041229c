"""model: a Hugging Face transformers model's attention, stepped through in its own code.

Tiny checkpoints of each supported architecture are built here with random weights and
``save_pretrained`` (nothing downloads). The weights are checked against the model's own
``output_attentions``; queries, keys (after rotary), values and context against a
computation written here from the model's weight tensors; the source files against
transformers' modeling files."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

transformers = pytest.importorskip("transformers")

from tracer.errors import UsageError  # noqa: E402
from tracer.tracing.runner import TraceOptions, start_trace  # noqa: E402

Attn = Callable[..., tuple[int, str, str]]
WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "to", "big", "red"]
TEXT = "the cat sat on the mat the cat sat on the mat"
LAYER, HEAD = 1, 2
KINDS = ("gpt2", "llama", "qwen2", "mistral", "gemma2")


def byte_level_tokenizer():
    from tokenizers import ByteLevelBPETokenizer

    made = ByteLevelBPETokenizer()
    made.train_from_iterator([TEXT, " ".join(WORDS)] * 4, vocab_size=300, min_frequency=1)
    return transformers.PreTrainedTokenizerFast(tokenizer_object=made._tokenizer)


def word_tokenizer():
    from tokenizers import Tokenizer, pre_tokenizers
    from tokenizers.models import WordLevel

    made = Tokenizer(WordLevel({w: i for i, w in enumerate([*WORDS, "[UNK]"])}, unk_token="[UNK]"))
    made.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return transformers.PreTrainedTokenizerFast(tokenizer_object=made, unk_token="[UNK]")


def build(kind: str, folder: Path) -> Path:
    torch.manual_seed(0)
    common: dict[str, Any] = dict(num_hidden_layers=2, num_attention_heads=4)
    if kind == "gpt2":
        tokenizer = byte_level_tokenizer()
        config = transformers.GPT2Config(
            vocab_size=len(tokenizer), n_positions=64, n_embd=16, n_layer=2, n_head=4
        )
        model = transformers.GPT2LMHeadModel(config)
    else:
        tokenizer = word_tokenizer()
        sizes = dict(
            vocab_size=len(tokenizer),
            hidden_size=16,
            intermediate_size=32,
            num_key_value_heads=2,
            max_position_embeddings=64,
            head_dim=4,
            **common,
        )
        if kind == "llama":
            model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**sizes))
        elif kind == "mistral":
            model = transformers.MistralForCausalLM(transformers.MistralConfig(**sizes))
        elif kind == "qwen2":
            model = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**sizes))
            with torch.no_grad():  # q/k/v biases, made large enough to matter
                for layer in model.model.layers:
                    for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj):
                        proj.bias.normal_(0, 0.5)
                    layer.self_attn.v_proj.bias.normal_(0, 0.5)
        else:
            model = transformers.Gemma2ForCausalLM(
                transformers.Gemma2Config(attn_logit_softcapping=2.0, **sizes)
            )
    path = folder / kind
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("checkpoints")
    return {kind: build(kind, folder) for kind in KINDS}


def traced(path: Path, text: str = TEXT, **options: Any):
    options = {"model": str(path), "layer": LAYER, "head": HEAD, **options}
    return start_trace("model", TraceOptions(text=text, options=options)).run_to_end()


def reference(path: Path, text: str) -> dict[str, torch.Tensor]:
    """Layer LAYER, head HEAD, from the weight tensors (the model's own attentions aside)."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager")
    model.eval()
    ids = torch.tensor([tokenizer(text)["input_ids"]])
    with torch.no_grad():
        out = model(input_ids=ids, output_attentions=True, output_hidden_states=True)
    h = out.hidden_states[LAYER][0]
    config = model.config
    n = h.shape[0]
    heads = config.num_attention_heads
    found: dict[str, torch.Tensor] = {"attentions": out.attentions[LAYER][0, HEAD]}
    if config.model_type == "gpt2":
        block = model.transformer.h[LAYER]
        x = torch.nn.functional.layer_norm(
            h, (h.shape[-1],), block.ln_1.weight, block.ln_1.bias, config.layer_norm_epsilon
        )
        qkv = x @ block.attn.c_attn.weight + block.attn.c_attn.bias  # Conv1D: x W + b
        d = h.shape[-1]
        dh = d // heads
        part = slice(HEAD * dh, (HEAD + 1) * dh)
        q, k, v = qkv[:, :d][:, part], qkv[:, d : 2 * d][:, part], qkv[:, 2 * d :][:, part]
        found.update(queries=q, keys=k, values=v)
    else:
        layer = model.model.layers[LAYER]
        attention = layer.self_attn
        weight, eps = layer.input_layernorm.weight, config.rms_norm_eps
        scale = weight + 1 if config.model_type == "gemma2" else weight  # Gemma stores w - 1
        x = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps) * scale
        dh = config.head_dim
        kv = HEAD // (heads // config.num_key_value_heads)

        def project(linear: torch.nn.Linear, index: int) -> torch.Tensor:
            out = x @ linear.weight.T + (linear.bias if linear.bias is not None else 0)
            return out[:, index * dh : (index + 1) * dh]

        q, k, v = (
            project(attention.q_proj, HEAD),
            project(attention.k_proj, kv),
            project(attention.v_proj, kv),
        )
        theta = config.rope_parameters["rope_theta"]
        inverse = 1.0 / theta ** (torch.arange(0, dh, 2).float() / dh)
        angles = torch.arange(n).float()[:, None] * inverse[None, :]
        cos, sin = torch.cat([angles, angles], -1).cos(), torch.cat([angles, angles], -1).sin()

        def rotate(t: torch.Tensor) -> torch.Tensor:
            half = torch.cat([-t[:, dh // 2 :], t[:, : dh // 2]], -1)
            return t * cos + half * sin

        found.update(queries_before=q, keys_before=k, queries=rotate(q), keys=rotate(k), values=v)
    scores = found["queries"] @ found["keys"].T
    if config.model_type == "gemma2":
        scores = scores * config.query_pre_attn_scalar**-0.5
        cap = config.attn_logit_softcapping
        scores = torch.tanh(scores / cap) * cap
    else:
        scores = scores / math.sqrt(found["queries"].shape[-1])
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)
    weights = torch.softmax(scores.masked_fill(future, -torch.inf), -1)
    found.update(weights=weights, context=weights @ found["values"], ids=ids[0])
    return found


def tensor(trace, stage: str, name: str | None = None) -> torch.Tensor:
    found = trace.stage(stage)
    return found.tensors[name or stage]


@pytest.mark.parametrize("kind", KINDS)
def test_every_stage_equals_the_model_and_a_computation_from_its_weights(
    checkpoints: dict[str, Path], kind: str
) -> None:
    trace = traced(checkpoints[kind])
    expected = reference(checkpoints[kind], TEXT)
    torch.testing.assert_close(tensor(trace, "weights"), expected["attentions"], atol=1e-5, rtol=0)
    torch.testing.assert_close(tensor(trace, "weights"), expected["weights"], atol=1e-4, rtol=0)
    if kind == "gpt2":
        assert "rotary" not in [s.name for s in trace.stages]
        torch.testing.assert_close(tensor(trace, "queries"), expected["queries"], atol=1e-4, rtol=0)
        torch.testing.assert_close(tensor(trace, "keys"), expected["keys"], atol=1e-4, rtol=0)
    else:
        torch.testing.assert_close(
            tensor(trace, "queries"), expected["queries_before"], atol=1e-4, rtol=0
        )
        torch.testing.assert_close(
            tensor(trace, "rotary", "queries"), expected["queries"], atol=1e-4, rtol=0
        )
        torch.testing.assert_close(
            tensor(trace, "rotary", "keys"), expected["keys"], atol=1e-4, rtol=0
        )
    torch.testing.assert_close(tensor(trace, "values"), expected["values"], atol=1e-4, rtol=0)
    torch.testing.assert_close(tensor(trace, "context"), expected["context"], atol=1e-4, rtol=0)
    assert tensor(trace, "tokens", "ids").tolist() == expected["ids"].tolist()


@pytest.mark.parametrize("kind", KINDS)
def test_the_source_is_transformers_own_modeling_file(
    checkpoints: dict[str, Path], kind: str
) -> None:
    trace = traced(checkpoints[kind])
    modeling = Path(transformers.__file__).parent / "models" / kind / f"modeling_{kind}.py"
    source = modeling.read_text().splitlines()
    for name in ("inputs", "queries", "scores", "weights", "context", "output"):
        found = trace.stage(name)
        assert Path(found.source_file) == modeling, name
        assert found.lines, name
    # The weights are the softmax line of the model's eager attention function.
    assert any("softmax(" in source[line - 1] for line in trace.stage("weights").lines)
    assert any("matmul(" in source[line - 1] for line in trace.stage("scores").lines)
    # Where the model's own code ran, the plugin's plumbing (the pauses) is not listed beside it.
    for name in ("queries", "scores", "weights", "context"):
        assert set(trace.stage(name).files) == {str(modeling)}, name


def test_tokens_are_labelled_as_the_tokenizer_splits_them(checkpoints: dict[str, Path]) -> None:
    path = checkpoints["gpt2"]
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    ids = tokenizer(TEXT)["input_ids"]
    split = tokenizer.convert_ids_to_tokens(ids)
    assert any(token.startswith("Ġ") for token in split)
    trace = traced(path)
    assert list(trace.tokens) == [token.replace("Ġ", "␣") for token in split]


def test_a_character_split_over_tokens_is_shown_as_its_bytes(checkpoints: dict[str, Path]) -> None:
    trace = traced(checkpoints["gpt2"], text="the cat é")
    assert "é" not in "".join(trace.tokens) or "\\x" not in "".join(trace.tokens)
    assert all("\ufffd" not in token and "Ã" not in token for token in trace.tokens)


def test_the_json_of_trace_names_the_file_and_the_tokens(
    checkpoints: dict[str, Path], attn: Attn
) -> None:
    status, out, err = attn(
        "trace", "model", "-o", f"model={checkpoints['llama']}", "-o", "layer=1", "-o",
        "head=2", "--text", TEXT, "--json",
    )  # fmt: skip
    assert status == 0, err
    document = json.loads(out)
    assert document["tokens"] == TEXT.split()
    weights = next(s for s in document["stages"] if s["name"] == "weights")
    assert weights["source"]["file"].endswith("models/llama/modeling_llama.py")
    expected = reference(checkpoints["llama"], TEXT)["attentions"]
    got = torch.tensor(weights["tensors"]["weights"])
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=0)


def test_query_focuses_one_row(checkpoints: dict[str, Path]) -> None:
    path = checkpoints["llama"]
    whole = tensor(traced(path), "weights")
    options = {"model": str(path), "layer": LAYER, "head": HEAD}
    one = start_trace("model", TraceOptions(text=TEXT, query=5, options=options)).run_to_end()
    torch.testing.assert_close(tensor(one, "weights"), whole[5])


def test_head_view_and_roles(checkpoints: dict[str, Path]) -> None:
    path = checkpoints["llama"]
    trace = traced(path)
    heads = trace.stage("heads")
    expected = reference(path, TEXT)
    all_heads = heads.tensors["weights"]
    assert all_heads.shape[0] == 4
    torch.testing.assert_close(all_heads[HEAD], expected["attentions"], atol=1e-5, rtol=0)
    n = all_heads.shape[-1]
    previous = sum(float(all_heads[HEAD, i, i - 1]) for i in range(1, n)) / (n - 1)
    assert float(heads.tensors["previous_token"][HEAD]) == pytest.approx(previous, abs=1e-6)
    first = sum(float(all_heads[HEAD, i, 0]) for i in range(1, n)) / (n - 1)
    assert float(heads.tensors["first_token"][HEAD]) == pytest.approx(first, abs=1e-6)
    ids = expected["ids"].tolist()
    per_query = [
        sum(float(all_heads[HEAD, i, k + 1]) for k in range(i) if ids[k] == ids[i])
        for i in range(n)
        if any(ids[k] == ids[i] for k in range(i))
    ]
    assert float(heads.tensors["induction"][HEAD]) == pytest.approx(
        sum(per_query) / len(per_query), abs=1e-6
    )


def test_the_shipped_model_opens_offline(attn: Attn, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    status, out, err = attn("trace", "model", "--json")
    assert status == 0, err
    document = json.loads(out)
    assert document["tokens"] == list("RJOSBIMLNGRJOSBIMLNG")
    weights = next(s for s in document["stages"] if s["name"] == "weights")
    assert weights["source"]["file"].endswith("models/llama/modeling_llama.py")


def test_the_shipped_model_has_its_heads() -> None:
    """Layer 0 has a previous-token head and layer 1 an induction head, on a repeat."""
    text = "R J O S B I M L N G R J O S B I M L N G"
    for layer, role in ((0, "previous_token"), (1, "induction")):
        trace = start_trace("model", TraceOptions(text=text, options={"layer": layer})).run_to_end()
        assert float(trace.stage("heads").tensors[role].max()) > 0.5, role


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["-o", "model=/nonexistent/folder"], "was not found"),
        (["-o", "layer=9"], "-o layer=9 is out of range"),
        (["-o", "head=9"], "-o head=9 is out of range"),
    ],
)
def test_mistakes_are_one_line(attn: Attn, argv: list[str], expected: str) -> None:
    status, _, err = attn("trace", "model", *argv, "--text", "A B A B")
    assert status == 2
    assert expected in err
    assert len(err.strip().splitlines()) == 1, err


def test_an_unsupported_architecture_is_one_line(tmp_path: Path, attn: Attn) -> None:
    config = transformers.GPTNeoXConfig(
        vocab_size=12, hidden_size=16, num_hidden_layers=1, num_attention_heads=4,
        intermediate_size=32,
    )  # fmt: skip
    transformers.GPTNeoXForCausalLM(config).save_pretrained(tmp_path / "neox")
    word_tokenizer().save_pretrained(tmp_path / "neox")
    status, _, err = attn("trace", "model", "-o", f"model={tmp_path / 'neox'}", "--text", "a")
    assert status == 2
    assert "gpt2, llama, qwen2, mistral, gemma2" in err
    assert len(err.strip().splitlines()) == 1


def test_text_is_refused_by_a_variant_without_a_tokenizer(attn: Attn) -> None:
    status, _, err = attn("trace", "masked", "--text", "hello")
    assert status == 2
    assert "--text is for variants" in err


def test_without_transformers_it_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracer.builtin_plugins import _model_loading as loading

    monkeypatch.setattr(loading, "transformers_missing", lambda: True)
    monkeypatch.setattr(loading, "_LOADED", {})
    with pytest.raises(UsageError, match=r"pip install 'attention-tracer\[models\]'"):
        loading.load("")


def test_sentencepiece_tokens_show_their_space_mark() -> None:
    from tokenizers import SentencePieceBPETokenizer
    from tracer.builtin_plugins._model_loading import label

    made = SentencePieceBPETokenizer()
    made.train_from_iterator([TEXT] * 4, vocab_size=60, min_frequency=1)
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=made._tokenizer)
    ids = tokenizer(TEXT)["input_ids"]
    split = tokenizer.convert_ids_to_tokens(ids)
    assert any(token.startswith("▁") for token in split)
    assert [label(tokenizer, i) for i in ids] == [token.replace("▁", "␣") for token in split]


def test_without_transformers_attn_plugins_says_it_is_unavailable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tracer.builtin_plugins import model

    assert "unavailable" not in model._title()
    monkeypatch.setattr(model, "transformers_missing", lambda: True)
    assert model._title().endswith("[unavailable: pip install 'attention-tracer[models]']")
    assert "Unavailable: transformers is not installed" in model._description()


def test_an_inputs_file_may_give_text(
    checkpoints: dict[str, Path], tmp_path: Path, attn: Attn
) -> None:
    given = tmp_path / "text.yaml"
    given.write_text('text: "the cat sat on the mat"\n')
    status, out, err = attn(
        "trace", "model", "-o", f"model={checkpoints['llama']}", "--inputs", str(given), "--json"
    )
    assert status == 0, err
    assert json.loads(out)["tokens"] == ["the", "cat", "sat", "on", "the", "mat"]
    refused = tmp_path / "both.yaml"
    refused.write_text('text: "the cat"\ntokens: [the, cat]\n')
    status, _, err = attn("trace", "model", "--inputs", str(refused))
    assert status == 2
    assert "give 'text' alone" in err
