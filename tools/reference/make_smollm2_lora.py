"""A tiny LoRA adapter for SmolLM2-135M-Instruct, and what PEFT generates with it.

Usage: make_smollm2_lora.py <model.gguf> <fixtures-dir>

No LoRA adapter for SmolLM2 reaches these machines (no Hugging Face hub, none in a registry
package), so this makes one in the real PEFT layout, with PEFT itself: `get_peft_model` on
transformers' SmolLM2 (read from the same GGUF the sidecar loads, dequantized to float32), a
rank-2 `LoraConfig` on the attention projections and `down_proj`, seeded random matrices in
place of training, and `save_pretrained`, which writes `adapter_config.json` and
`adapter_model.safetensors` into `<fixtures-dir>/smollm2-lora/`. The matrices are then stored
as float16, as adapters usually are, to keep the committed file small.

The adapter is read back with `PeftModel.from_pretrained` and decodes the prompts greedily in
float32; `<fixtures-dir>/smollm2-lora.json` records the prompt tokens, the greedy tokens and
each step's top-two margin, as make_smollm2_f32_fixture.py does for the base model. `B` is
scaled so that the adapter changes the answers within the first tokens but keeps them
language; the script fails if a case's answer is the base model's.

Deterministic: seeded, one thread, so a rerun with the same requirements.txt writes the same
files.
"""

import hashlib
import importlib.metadata
import json
import math
import os
import sys

# Everything is read from the local file; nothing may be fetched from the Hugging Face hub.
os.environ["HF_HUB_OFFLINE"] = "1"

import peft  # noqa: E402
import safetensors.torch  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from peft import LoraConfig, PeftModel, get_peft_model  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

from smollm2_prompts import SHARED_PROMPTS, greedy, prompt_tokens  # noqa: E402

STEPS = 24
BASE_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
SEED = 20261204
RANK = 2
ALPHA = 4
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "down_proj"]
# Standard deviation of B's entries; A's are N(0, 1/in). Large enough that the update moves
# greedy decoding off the base model's path within a few tokens.
B_STD = 0.05

PROMPTS = [
    {"name": "colours", "prompt": "The three primary colours are"},
    *SHARED_PROMPTS[:2],
]


def load_base(path):
    directory, file = os.path.split(os.path.abspath(path))
    tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=file)
    model = AutoModelForCausalLM.from_pretrained(directory, gguf_file=file, dtype=torch.float32)
    model.eval()
    return tokenizer, model


def make_adapter(model, out_dir):
    config = LoraConfig(
        r=RANK,
        lora_alpha=ALPHA,
        target_modules=TARGETS,
        lora_dropout=0.0,
        bias="none",
        task_type="CAUSAL_LM",
    )
    adapted = get_peft_model(model, config)
    generator = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, module in sorted(adapted.named_modules()):
            if not hasattr(module, "lora_A") or "default" not in module.lora_A:
                continue
            a = module.lora_A["default"].weight
            b = module.lora_B["default"].weight
            a.copy_(torch.randn(a.shape, generator=generator) / math.sqrt(a.shape[1]))
            b.copy_(torch.randn(b.shape, generator=generator) * B_STD)
    adapted.save_pretrained(out_dir, safe_serialization=True)
    weights = os.path.join(out_dir, "adapter_model.safetensors")
    with safetensors.safe_open(weights, framework="pt") as f:
        metadata = f.metadata()
        tensors = {k: f.get_tensor(k).to(torch.float16).contiguous() for k in f.keys()}
    safetensors.torch.save_file(tensors, weights, metadata=metadata)
    # save_pretrained writes a README.md model card that says nothing about these weights,
    # and records the base as the local directory it was read from; the hub id says which
    # model it is wherever the fixture is read.
    readme = os.path.join(out_dir, "README.md")
    if os.path.exists(readme):
        os.remove(readme)
    config_path = os.path.join(out_dir, "adapter_config.json")
    with open(config_path, encoding="utf-8") as f:
        saved = json.load(f)
    saved["base_model_name_or_path"] = BASE_ID
    # PEFT keeps target_modules as a set: its order changes from run to run.
    saved["target_modules"] = sorted(saved["target_modules"])
    with open(config_path, "w", encoding="utf-8") as f:
        json.dump(saved, f, indent=2, sort_keys=True)
        f.write("\n")
    return adapted.unload()


def main():
    path, fixtures = sys.argv[1], sys.argv[2]
    torch.manual_seed(0)
    torch.set_num_threads(1)
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    tokenizer, model = load_base(path)
    eos = sorted(
        {
            tokenizer.convert_tokens_to_ids(t)
            for t in ("<|endoftext|>", "<|im_end|>")
            if t in tokenizer.get_vocab()
        }
    )
    adapter_dir = os.path.join(fixtures, "smollm2-lora")
    base = make_adapter(model, adapter_dir)
    adapted = PeftModel.from_pretrained(base, adapter_dir)
    adapted.eval()

    cases = []
    for case in PROMPTS:
        ids = prompt_tokens(tokenizer, case)
        with adapted.disable_adapter():
            plain, _ = greedy(adapted, ids, eos, STEPS)
        tokens, margins = greedy(adapted, ids, eos, STEPS)
        if tokens[:8] == plain[:8]:
            raise SystemExit(f"{case['name']}: the adapter does not change the first 8 tokens")
        if len(tokens) < STEPS:
            raise SystemExit(f"{case['name']}: ended after {len(tokens)} tokens")
        cases.append(
            {
                **case,
                "prompt_tokens": ids,
                "greedy": tokens,
                "margins": margins,
                "base_greedy": plain,
                "text": tokenizer.decode(tokens),
            }
        )

    fixture = {
        "model": "SmolLM2-135M-Instruct.Q4_1.gguf, dequantized to float32",
        "gguf_sha256": digest,
        "adapter": "smollm2-lora",
        "generator": (
            f"peft {peft.__version__}, transformers {transformers.__version__}, "
            f"torch {torch.__version__}, gguf {importlib.metadata.version('gguf')}"
        ),
        "steps": STEPS,
        "eos": eos,
        "cases": cases,
    }
    with open(os.path.join(fixtures, "smollm2-lora.json"), "w", encoding="utf-8") as f:
        json.dump(fixture, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
