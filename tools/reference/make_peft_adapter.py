"""A tiny LoRA adapter exactly as PEFT writes it, for the adapter registry's validation tests.

No trained LoRA adapter reaches these machines (no Hugging Face hub), and the registry's own
tests build adapters with a TypeScript writer; this one comes from PEFT itself, so the tests
also pin the layout PEFT really produces: the keys its `adapter_config.json` carries in this
version, and the tensor names and shapes of `adapter_model.safetensors`.

It makes a small random Llama (2 layers, hidden 64, 4 query and 2 key/value heads, so grouped-
query attention makes k/v narrower than q, as in SmolLM2), wraps it with `get_peft_model` on
every projection of layer 1 only (`layers_to_transform`), fills `lora_B` with seeded random
values (PEFT initialises it to zero; a trained adapter's is not), and `save_pretrained`s:

    fixtures/tiny/lora/base/config.json                  the base's transformers config
    fixtures/tiny/lora/adapter/adapter_config.json       PEFT's config
    fixtures/tiny/lora/adapter/adapter_model.safetensors PEFT's weights (f32)

Run through regenerate.sh, or with the reference venv's python:
    python make_peft_adapter.py [output-directory]      (default: fixtures/tiny/lora beside it)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import torch  # noqa: E402
from peft import LoraConfig, get_peft_model  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

SEED = 20261


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "fixtures" / "tiny" / "lora"
    torch.manual_seed(SEED)
    config = LlamaConfig(
        vocab_size=256,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
    )
    model = LlamaForCausalLM(config)
    lora = LoraConfig(
        r=4,
        lora_alpha=8,
        lora_dropout=0.0,
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        layers_to_transform=[1],
        task_type="CAUSAL_LM",
    )
    peft_model = get_peft_model(model, lora)
    with torch.no_grad():
        for name, parameter in peft_model.named_parameters():
            if "lora_B" in name:
                parameter.copy_(torch.randn_like(parameter) * 0.01)
    (out / "base").mkdir(parents=True, exist_ok=True)
    config.save_pretrained(out / "base")
    peft_model.save_pretrained(out / "adapter")


if __name__ == "__main__":
    main()
