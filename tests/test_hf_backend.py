"""Transformers backend on a tiny random Llama and a BPE tokenizer trained here (no downloads)."""

import sys

import pytest
from conftest import TOY

from grpo_wb.errors import UserError
from grpo_wb.rollouts.hf_backend import MISSING_EXTRA, TransformersBackend, TransformersConfig
from grpo_wb.rollouts.sampling import CLIPPED_RATIO, MEAN_LENGTH, request_seed
from grpo_wb.rollouts.types import RolloutRequest
from grpo_wb.tasks.records import load_tasks

pytestmark = [pytest.mark.hf]

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
SPECIALS = ["<pad>", "<s>", "</s>", "<|system|>", "<|user|>", "<|assistant|>"]


def _bpe(corpus, vocab_size: int, special_tokens: list[str]):
    """A byte-level BPE ``tokenizers.Tokenizer`` trained here on ``corpus``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        corpus,
        trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=special_tokens,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    return tok


def _tokenizer(corpus):
    from transformers import PreTrainedTokenizerFast

    tok = _bpe(corpus, 400, SPECIALS)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>")


def _tiny_llama(tok, **config):
    """A random (seed 0) 2-layer Llama of hidden size 32 for ``tok``; ``config``: the rest of its ``LlamaConfig``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    shape = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4)
    ids = dict(pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
    return LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), **shape, **ids, **config))


def _pin_dim0(model, embedding: float, logit: float, tokens, token_logit: float) -> None:
    """Residual dimension 0 held at a constant: embedding column 0 set to ``embedding`` and nothing writes to it,
    so after the final norm it is a positive constant; ``lm_head[:, 0]`` is ``logit``, ``token_logit`` for
    ``tokens``: a fixed preference among tokens whatever the rest of the network computes."""
    import torch

    with torch.no_grad():
        model.model.embed_tokens.weight[:, 0] = embedding
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight[0, :] = 0.0
            layer.mlp.down_proj.weight[0, :] = 0.0
        model.lm_head.weight[:, 0] = logit
        model.lm_head.weight[tokens, 0] = token_logit


def _model(tok, eos_logit=None):
    """A random 2-layer Llama; with ``eos_logit`` its EOS logit is about that much above the rest.

    Residual dimension 0 is held at a constant (embedding column 0, nothing
    writes to it), so after the final norm it is a positive constant and
    ``lm_head[eos, 0]`` sets a fixed EOS preference: some samples stop early,
    others run to max_tokens.
    """
    model = _tiny_llama(tok, num_key_value_heads=2, max_position_embeddings=512, bos_token_id=tok.bos_token_id)
    if eos_logit is not None:
        _pin_dim0(model, 100.0, 0.0, tok.eos_token_id, eos_logit / 32**0.5)  # normed dim 0 ~ sqrt(hidden)
    return model


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    """Model directories: plain (no chat template), chat (same weights + template), eos (EOS-biased)."""
    import tokenizers  # noqa: F401 - the extra is part of `make test`: missing, this fails (never skips)
    import torch  # noqa: F401 - the extra is part of `make test`: missing, this fails (never skips)
    import transformers  # noqa: F401 - the extra is part of `make test`: missing, this fails (never skips)

    tasks = load_tasks(TOY)
    tok = _tokenizer([t.prompt + (t.canonical_solution or "") for t in tasks] * 3)
    root = tmp_path_factory.mktemp("hf")
    out = {}
    for name, template, eos_logit in (("plain", None, None), ("chat", CHAT_TEMPLATE, None), ("eos", None, 4.0)):
        d = root / name
        tok.chat_template = template
        tok.save_pretrained(d)
        _model(tok, eos_logit).save_pretrained(d)
        out[name] = str(d)
    return out


@pytest.fixture(scope="module")
def tasks():
    return load_tasks(TOY)


def backend(path, **kw):
    kw.setdefault("max_tokens", 12)
    kw.setdefault("device", "cpu")
    return TransformersBackend(TransformersConfig(model_path=path, **kw))


def test_g_completions_per_task_with_metadata(dirs, tasks):
    b = backend(dirs["plain"], seed=3, temperature=0.9, top_p=0.95)
    groups = b.generate([RolloutRequest(t, 4, 0, 0) for t in tasks[:2]])
    assert [len(g) for g in groups] == [4, 4]
    prompt_len = len(b.tokenizer(tasks[0].prompt)["input_ids"])
    for t, grp in zip(tasks, groups):
        assert [c.sample_index for c in grp] == [0, 1, 2, 3]
        for c in grp:
            seed = request_seed(3, RolloutRequest(t, 4, 0, 0))
            assert (c.task_id, c.backend, c.seed) == (t.task_id, "transformers", seed)
            assert c.model and isinstance(c.text, str) and c.finish_reason in ("stop", "length")
            assert c.sampling == {"temperature": 0.9, "top_p": 0.95, "max_tokens": 12, "stop": []}
            assert 1 <= c.extra["completion_tokens"] <= 12 and c.extra["mode"] == "completions"
            assert c.extra["latency_s"] >= 0
            assert t.prompt not in c.text  # only the new tokens are decoded
    assert groups[0][0].extra["prompt_tokens"] == prompt_len
    d = b.describe()
    assert (d["backend"], d["mode"], d["device"], d["dtype"]) == ("transformers", "completions", "cpu", "torch.float32")
    assert d["model_path"] == dirs["plain"] and d["sampling"]["max_tokens"] == 12


def test_same_seed_same_texts_other_seed_or_step_other_texts(dirs, tasks):
    def texts(seed, step=0):
        return [
            c.text
            for g in backend(dirs["plain"], seed=seed).generate([RolloutRequest(t, 3, step, 0) for t in tasks[:2]])
            for c in g
        ]

    first = texts(7)
    assert first == texts(7)
    assert first != texts(8) and first != texts(7, step=1)


def test_finish_reason_and_token_counts_follow_eos(dirs, tasks):
    b = backend(dirs["eos"], seed=0, max_tokens=6)
    groups = b.generate([RolloutRequest(t, 8, 0, 0) for t in tasks[:3]])
    flat = [c for g in groups for c in g]
    reasons = {c.finish_reason for c in flat}
    assert reasons == {"stop", "length"}  # EOS-biased: a mix, fixed by the seed
    for c in flat:
        n = c.extra["completion_tokens"]
        assert (n == 6) if c.finish_reason == "length" else (1 <= n <= 6)
        assert "</s>" not in c.text and "<pad>" not in c.text
    clipped = sum(c.finish_reason == "length" for c in flat) / len(flat)
    assert b.last_stats[CLIPPED_RATIO] == pytest.approx(clipped)
    assert b.last_stats[MEAN_LENGTH] == pytest.approx(sum(c.extra["completion_tokens"] for c in flat) / len(flat))
    assert b.last_stats["num_completions"] == 24 and b.last_stats["requests"] == 3


def test_stop_strings_cut_the_completion_like_a_server_would(dirs, tasks):
    reqs = [RolloutRequest(t, 4, 0, 0) for t in tasks[:2]]
    free = [c.text for g in backend(dirs["plain"], seed=1, max_tokens=16).generate(reqs) for c in g]
    stop = next(ch for ch in "etaonirs" if sum(ch in t for t in free) >= 2)
    cut = backend(dirs["plain"], seed=1, max_tokens=16, stop=[stop]).generate(reqs)
    for text, c in zip(free, [c for g in cut for c in g]):
        if stop in text:
            assert c.text == text[: text.index(stop)] and c.finish_reason == "stop"
        else:
            assert c.text == text


def test_chat_template_is_used_when_the_tokenizer_has_one(dirs, tasks):
    t = tasks[0]
    b = backend(dirs["chat"], seed=0, system_prompt="Be terse.")
    assert b.mode == "chat" and b.describe()["mode"] == "chat" and b.describe()["system_prompt"] == "Be terse."
    (grp,) = b.generate([RolloutRequest(t, 2, 0, 0)])
    rendered = b.tokenizer.apply_chat_template(b.config.messages(t), add_generation_prompt=True, tokenize=False)
    assert rendered.startswith("<|system|>Be terse.\n<|user|>") and rendered.endswith("<|assistant|>")
    ids = b.prompt_ids(RolloutRequest(t, 2, 0, 0))
    assert ids == b.tokenizer(rendered, add_special_tokens=False)["input_ids"]
    assert ids[0] == b.tokenizer.convert_tokens_to_ids("<|system|>")
    assert grp[0].extra["prompt_tokens"] == len(ids) and grp[0].extra["mode"] == "chat"
    assert len(ids) > len(b.tokenizer(t.prompt)["input_ids"])
    forced = backend(dirs["chat"], mode="completions")
    assert forced.prompt_ids(RolloutRequest(t, 2, 0, 0)) == forced.tokenizer(t.prompt)["input_ids"]


def test_chat_mode_without_a_template_is_a_user_error(dirs):
    with pytest.raises(UserError, match="mode chat needs a tokenizer with a chat template"):
        backend(dirs["plain"], mode="chat")


def test_missing_model_directory_is_a_user_error(dirs, tmp_path):
    with pytest.raises(UserError, match="^model directory not found"):
        backend(str(tmp_path / "nope"))
    with pytest.raises(UserError, match="^cannot load a model from"):
        backend(str(tmp_path))


def test_without_the_extra_the_error_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` fail
    with pytest.raises(UserError) as e:
        TransformersBackend(TransformersConfig(model_path=str(tmp_path)))
    assert str(e.value) == MISSING_EXTRA == "the transformers backend needs the [hf] extra: pip install 'grpo_wb[hf]'"


def test_temperature_zero_is_greedy_and_gives_g_identical_completions(dirs, tasks):
    (grp,) = backend(dirs["plain"], temperature=0.0).generate([RolloutRequest(tasks[0], 3, 0, 0)])
    assert [c.sample_index for c in grp] == [0, 1, 2] and len({c.text for c in grp}) == 1
