"""Greedy-decoding reference for SmolLM2-135M-Instruct (Q4_1 GGUF) from llama.cpp.

Usage: make_smollm2_fixture.py <model.gguf> <out.json>

llama-cpp-python reads the same GGUF file the sidecar loads, tokenises each prompt with the
GGUF's own tokenizer (special-token text such as `<|im_start|>` parsed as special tokens,
BOS only if the file asks for it), then decodes greedily: at every step the argmax of the
last position's logits, fed back one token at a time. The chat prompt is rendered from the
GGUF's `tokenizer.chat_template` with Jinja2 configured as transformers' apply_chat_template
configures it (trim_blocks, lstrip_blocks), so the fixture pins the rendered text too.

`margins[i]` is the gap between the best and second-best logit at step i. Candle's Q4_1
matmuls and llama.cpp's agree to about 0.3 logits, not bit for bit (see the golden test), so
a step whose margin is smaller is a near-tie either implementation may break either way.

The sidecar's golden test (sidecar-rs/crates/candle/tests/smollm2.rs) requires the same
prompt tokens, the same token ids for every `tokenize` text, and the same greedy tokens up to
the first near-tie.
"""

import hashlib
import json
import sys

import jinja2
import jinja2.sandbox
import llama_cpp
import numpy as np
from smollm2_prompts import SHARED_PROMPTS

# Generated tokens per prompt; the test requires identity on all of them (at least 32).
STEPS = 40
MIN_STEPS = 32

PROMPTS = [
    {"name": "capital", "prompt": "The capital of France is"},
    *SHARED_PROMPTS,
]

# Awkward texts for the tokenizer alone: digits, runs of spaces, newlines, accents, CJK,
# emoji, contractions, and special-token text in the middle of a sentence.
TOKENIZE = [
    "Hello world",
    "  leading and   inner spaces  ",
    "line one\nline two\n\n\ttabbed",
    "1234567 + 89 = 1234656; π≈3.14159",
    "naïve café, Straße, Øre, ŝ",
    "日本語のテキストと中文文本",
    "emoji 😀👍🏽🇫🇷 end",
    "I'm sure they'll say we've done it, isn't it?",
    "<|im_start|>user\nhi<|im_end|>\n",
    "",
]


def render_chat(template: str, messages, bos: str, eos: str) -> str:
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(template).render(
        messages=messages, add_generation_prompt=True, bos_token=bos, eos_token=eos
    )


def main() -> None:
    gguf, out = sys.argv[1], sys.argv[2]
    with open(gguf, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    llm = llama_cpp.Llama(
        model_path=gguf, n_ctx=1024, n_batch=512, n_threads=2, seed=0, verbose=False
    )
    meta = llm.metadata
    eos = {int(meta["tokenizer.ggml.eos_token_id"])}
    tokens_text = [
        llm.detokenize([i], special=True).decode("utf-8", "replace") for i in range(llm.n_vocab())
    ]
    # llama.cpp also ends generation at these control tokens (end-of-generation set).
    for i, t in enumerate(tokens_text):
        if t in ("<|endoftext|>", "<|im_end|>"):
            eos.add(i)
    bos_text = tokens_text[int(meta["tokenizer.ggml.bos_token_id"])]
    eos_text = tokens_text[int(meta["tokenizer.ggml.eos_token_id"])]

    cases = []
    for case in PROMPTS:
        if "messages" in case:
            text = render_chat(meta["tokenizer.chat_template"], case["messages"], bos_text, eos_text)
        else:
            text = case["prompt"]
        prompt_tokens = llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)
        llm.reset()
        llm.eval(prompt_tokens)
        greedy, margins = [], []
        for _ in range(STEPS):
            # The logits of the last evaluated position, read from llama.cpp directly: the
            # wrapper's `scores` array is only filled when every position's logits are kept.
            pointer = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
            logits = np.ctypeslib.as_array(pointer, shape=(llm.n_vocab(),)).copy()
            token = int(np.argmax(logits))
            top2 = np.partition(logits, -2)[-2:]
            margins.append(round(float(abs(top2[1] - top2[0])), 5))
            greedy.append(token)
            if token in eos:
                break
            llm.eval([token])
        if len(greedy) < MIN_STEPS:
            raise SystemExit(f"{case['name']}: ended after {len(greedy)} tokens; pick another prompt")
        cases.append(
            {
                **case,
                "text": text,
                "prompt_tokens": prompt_tokens,
                "greedy": greedy,
                "margins": margins,
            }
        )

    tokenize = [
        {"text": t, "ids": llm.tokenize(t.encode("utf-8"), add_bos=True, special=True)}
        for t in TOKENIZE
    ]
    fixture = {
        "model": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "gguf_sha256": digest,
        "generator": f"llama-cpp-python {llama_cpp.__version__}, jinja2 {jinja2.__version__}",
        "steps": STEPS,
        "eos": sorted(eos),
        "cases": cases,
        "tokenize": tokenize,
    }
    with open(out, "w", encoding="utf-8") as f:
        json.dump(fixture, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
