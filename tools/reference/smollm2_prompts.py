"""The SmolLM2 golden prompts both reference scripts share: a chat turn rendered by the GGUF's
template, French, code and emoji. Each script puts its own plain-text prompt first."""

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
