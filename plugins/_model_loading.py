"""Loading a Hugging Face transformers model for the ``model`` variant and for checking a
learner's attention against it (``attn check --against model``): the options that pick a
model, layer and head, the shipped model and its checksums, the tokenizer's labels, and
running the model outside the tracer's line recording."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
import warnings
from pathlib import Path

from tracer import Option
from tracer.errors import UsageError

SHIPPED = Path(__file__).with_name("letters_model")
"""The shipped model: a folder written by ``save_pretrained``, with its tokenizer."""
CHECKSUMS = SHIPPED / "checksums.sha256"
INSTALL = "pip install 'attention-tracer[models]'"
SUPPORTED = ("gpt2", "llama", "qwen2", "mistral", "gemma2")
"""Architectures (``config.model_type``) whose attention this variant steps through."""
DEFAULT_TEXT = "R J O S B I M L N G R J O S B I M L N G"
"""Ten random letters, twice (lesson 13's task): a repeat that induction heads continue."""

MODEL = Option(
    "model",
    str,
    "",
    "a folder saved with save_pretrained, or a Hugging Face hub name (cached, or downloaded "
    "where transformers may); empty: the small model shipped with attn",
)
LAYER = Option("layer", int, 0, "the layer to step through (0 is the first)", min=0)
HEAD = Option("head", int, 0, "the attention head to follow (0 is the first)", min=0)

_LOADED: dict[str, tuple[object, object]] = {}
"""Loaded (tokenizer, model) by model option: loaded once per process (a worker forked after
the tool tokenized the text finds them here)."""


def transformers_missing() -> bool:
    """Whether transformers cannot be imported (looked up without importing it)."""
    try:
        return importlib.util.find_spec("transformers") is None
    except (ImportError, ValueError):
        return True


def _check_shipped() -> None:
    """The shipped model's files against their checksums (a damaged install says so)."""
    try:
        listed = [line.split() for line in CHECKSUMS.read_text().splitlines() if line.strip()]
        for digest, name in listed:
            if hashlib.sha256((SHIPPED / name).read_bytes()).hexdigest() != digest:
                raise UsageError(
                    f"{SHIPPED / name} does not match its sha256 checksum: the file is damaged; "
                    "reinstall attention-tracer or run scripts/train_model.py"
                )
    except (OSError, ValueError) as exc:
        raise UsageError(f"the shipped model cannot be read: {exc}") from None


def load(name: str):
    """The tokenizer and the model of ``-o model=NAME`` (the shipped one for ``""``)."""
    if name in _LOADED:
        return _LOADED[name]
    before = set(os.environ)
    try:
        return _load(name)
    finally:  # torch's compiler names a cache folder in the environment as transformers loads
        for added in set(os.environ) - before:
            del os.environ[added]


def _load(name: str):
    if transformers_missing():
        raise UsageError(f"variant 'model' needs Hugging Face transformers: {INSTALL}")
    import torch

    with warnings.catch_warnings():  # tqdm's "IProgress not found" in a notebook
        warnings.simplefilter("ignore")
        import transformers
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    try:  # the hub's retries and progress bars: an error here is one line
        import huggingface_hub

        huggingface_hub.utils.logging.set_verbosity_error()
        huggingface_hub.utils.disable_progress_bars()
    except (ImportError, AttributeError):
        pass
    if not name:
        _check_shipped()
    where = name or str(SHIPPED)
    shown = "the shipped model" if not name else f"model '{name}'"
    try:
        config = AutoConfig.from_pretrained(where)
    except (OSError, ValueError) as exc:
        offline = "; HF_HUB_OFFLINE is set" if _offline() else ""
        first = (str(exc).strip().splitlines() or [""])[0]
        raise UsageError(
            f"{shown} was not found: give a folder saved with save_pretrained or a hub name "
            f"in the Hugging Face cache{offline} ({first})"
        ) from None
    if config.model_type not in SUPPORTED:
        raise UsageError(
            f"{shown} is a '{config.model_type}' model; variant 'model' steps through "
            f"{', '.join(SUPPORTED)}"
        )
    try:
        tokenizer = AutoTokenizer.from_pretrained(where)
        model = AutoModelForCausalLM.from_pretrained(
            where, attn_implementation="eager", dtype=torch.float32
        )
    except (OSError, ValueError) as exc:
        first = (str(exc).strip().splitlines() or [""])[0]
        raise UsageError(f"{shown} cannot be loaded: {first}") from None
    model.eval()
    model.requires_grad_(False)
    _LOADED[name] = (tokenizer, model)
    return tokenizer, model


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")


def token_ids(tokenizer, text: str) -> list[int]:
    return list(tokenizer(text)["input_ids"])


def label(tokenizer, token_id: int) -> str:
    """A token as the tokenizer splits it, readable: spaces as ␣, bytes that are part of a
    character written as hex (GPT-2's byte-level tokens), never mojibake."""
    raw = tokenizer.convert_ids_to_tokens(token_id)
    if isinstance(raw, str) and "▁" in raw:  # SentencePiece (Llama, Gemma): ▁ is a space
        text = raw.replace("▁", " ")
    else:
        text = tokenizer.decode([token_id])
    if "\ufffd" in text:  # part of a character: its bytes, as the tokenizer holds them
        raw = tokenizer.convert_ids_to_tokens(token_id)
        data = _byte_level(raw)
        text = "".join(f"\\x{b:02x}" for b in data) if data is not None else str(raw)
    text = text.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥")
    return text or "∅"


def _byte_level(token: str) -> bytes | None:
    """The bytes a byte-level BPE token (GPT-2's ``Ġ`` for a space) stands for."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    codes = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            codes.append(256 + extra)
            extra += 1
    back = {chr(c): b for b, c in zip(printable, codes, strict=True)}
    if not all(ch in back for ch in token):
        return None
    return bytes(back[ch] for ch in token)


def tokenize(text: str, options) -> list[str]:
    tokenizer, _ = load(options["model"])
    return [label(tokenizer, i) for i in token_ids(tokenizer, text)]


# The model's own code, compiled again with pauses ------------------------------------------


class Stopped(Exception):
    """Ends the helper thread's pass once the chosen layer has run."""


def untraced(work):
    """``work()`` in a helper thread, whose lines the tracer does not record: loading the
    model, the layers before the chosen one, compiling the model's functions again."""
    result: list = []
    failure: list[BaseException] = []

    def call():
        try:
            result.append(work())
        except BaseException as exc:  # handed to the caller, which says what failed
            failure.append(exc)

    helper = threading.Thread(target=call, name="attn-model-helper")
    helper.start()
    helper.join()
    if failure:
        raise failure[0]
    return result[0]


def decoder_layers(model):
    base = model.base_model
    if hasattr(base, "h"):  # GPT-2
        return base.h
    return base.layers


def attention_of(layer):
    for name in ("self_attn", "attn"):
        if hasattr(layer, name):
            return getattr(layer, name)
    raise UsageError("this model's layers have no attention this variant knows")
