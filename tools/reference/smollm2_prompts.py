"""The SmolLM2 golden prompts the reference scripts share (a chat turn rendered by the GGUF's
template, French, code and emoji; each script puts its own plain-text prompt first), and how the
transformers-based ones tokenize and decode them."""

import torch

SHARED_PROMPTS = [
    {
        "name": "chat",
        "messages": [
            {"role": "user", "content": "Write a short poem about the sea, please."}
        ],
    },
    {"name": "french", "prompt": "Il était une fois, dans un petit café à Montréal, une"},
    {"name": "code", "prompt": "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"},
    {"name": "story", "prompt": "Once upon a time, in a village 🏡 by the mountains, there lived"},
]


def prompt_tokens(tokenizer, case):
    """The case's prompt as token ids: a chat case rendered by the tokenizer's chat template
    (whose text carries its own special tokens), a raw prompt with the tokenizer's own."""
    if "messages" in case:
        rendered = tokenizer.apply_chat_template(
            case["messages"], add_generation_prompt=True, tokenize=False
        )
        return tokenizer(rendered, add_special_tokens=False)["input_ids"]
    return tokenizer(case["prompt"], add_special_tokens=True)["input_ids"]


def greedy(model, ids, eos, steps):
    """Greedy decoding of up to `steps` tokens through the KV cache; returns the tokens and
    each step's gap between the best and second-best logit."""
    tokens, margins = [], []
    past = None
    feed = torch.tensor([ids])
    with torch.no_grad():
        for _ in range(steps):
            result = model(input_ids=feed, cache=past, use_cache=True)
            past = result.cache
            logits = result.logits[0, -1]
            top2 = torch.topk(logits, 2).values
            token = int(torch.argmax(logits))
            margins.append(round(float(top2[0] - top2[1]), 5))
            tokens.append(token)
            if token in eos:
                break
            feed = torch.tensor([[token]])
    return tokens, margins
