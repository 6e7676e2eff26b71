"""Greedy-decoding reference for SmolLM2-135M-Instruct from transformers reading the GGUF.

Usage: make_smollm2_f32_fixture.py <model.gguf> <out.json>

transformers loads the same Q4_1 GGUF file the sidecar loads (`from_pretrained(...,
gguf_file=...)`, through the `gguf` package), dequantizing every matrix to float32 and
computing in float32; its tokenizer is the one it builds from the GGUF's `tokenizer.ggml.*`
metadata, and the chat prompt is rendered by `apply_chat_template` from the GGUF's template.
That is what the sidecar computes when a GGUF is loaded with `dequantize: true`, so the two
agree to float32 rounding, where the quantized path agrees with llama.cpp only to a few tenths
of a logit (make_smollm2_fixture.py).

`margins[i]` is the gap between the best and second-best logit at step i. The golden test
(sidecar-rs/crates/candle/tests/smollm2.rs) requires the same prompt tokens and every greedy
token identical, allowing a difference only at a step whose margin is a float32 near-tie.
"""

import hashlib
import json
import os
import sys

# Everything is read from the local file; nothing may be fetched from the Hugging Face hub.
os.environ["HF_HUB_OFFLINE"] = "1"

import importlib.metadata  # noqa: E402

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

from smollm2_prompts import SHARED_PROMPTS, greedy, prompt_tokens  # noqa: E402

STEPS = 40

# The llama.cpp fixture's prompts, except its "capital", which transformers in float32 ends
# (end-of-turn token) after 30 tokens: a case must run the full STEPS tokens.
PROMPTS = [
    {"name": "colours", "prompt": "The three primary colours are"},
    *SHARED_PROMPTS,
]


def main() -> None:
    path, out = sys.argv[1], sys.argv[2]
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    directory, file = os.path.split(os.path.abspath(path))
    torch.manual_seed(0)
    torch.set_num_threads(1)
    tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=file)
    model = AutoModelForCausalLM.from_pretrained(directory, gguf_file=file, dtype=torch.float32)
    model.eval()
    eos = sorted(
        {
            tokenizer.convert_tokens_to_ids(t)
            for t in ("<|endoftext|>", "<|im_end|>")
            if t in tokenizer.get_vocab()
        }
    )

    cases = []
    for case in PROMPTS:
        ids = prompt_tokens(tokenizer, case)
        tokens, margins = greedy(model, ids, eos, STEPS)
        if len(tokens) < STEPS:
            raise SystemExit(f"{case['name']}: ended after {len(tokens)} tokens; pick another prompt")
        cases.append({**case, "prompt_tokens": ids, "greedy": tokens, "margins": margins})

    fixture = {
        "model": "SmolLM2-135M-Instruct.Q4_1.gguf, dequantized to float32",
        "gguf_sha256": digest,
        "generator": (
            f"transformers {transformers.__version__}, torch {torch.__version__}, "
            f"gguf {importlib.metadata.version('gguf')}"
        ),
        "steps": STEPS,
        "eos": eos,
        "cases": cases,
    }
    with open(out, "w", encoding="utf-8") as f:
        json.dump(fixture, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
