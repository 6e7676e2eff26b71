"""Golden outputs of sentence-transformers/all-MiniLM-L6-v2 for Shoal's embedding tests.

The TypeScript and Rust implementations are checked against what the reference
implementation (sentence-transformers on torch) produces for the same weights, so this
script records exactly what `SentenceTransformer.encode` returns, plus the token count
each input has after truncation, which the annotator's cost estimate must also match.

Run through regenerate.sh, or directly with the reference venv's python:
    SHOAL_MINILM_DIR=... python make_minilm_fixture.py [output.json]
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

# Must be set before transformers/huggingface_hub are imported: the weights come from
# a local directory and no machine of ours can reach the hub.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import sentence_transformers  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
MAX_SEQ_LENGTH = 256
DIM = 384

LONG_ENGLISH = (
    "Shoal is a self-hosted inference cluster for fleets of small open models. "
    "A thin gateway annotates each request with its estimated cost, assigns a length "
    "bucket, a priority and a deadline, and enqueues it on a shared work queue. "
    "Workers pull only what they can run right now and form their own batches from a "
    "prediction of batch cost that they learn from their own measurements, instead of "
    "having a central router push requests at them using a stale view of their state. "
    "When a worker over-pulls, it hands the surplus back, either by negatively "
    "acknowledging the message over the network or through a machine-local queue "
    "shared by the workers of one multi-accelerator host. Acknowledgements happen only "
    "after the reply has been published, so a worker or sidecar killed in the middle "
    "of a batch loses no request, and every client is answered exactly once because "
    "replies are deduplicated by request id. Deadlines travel with the work, expired "
    "work is never computed, and overload is answered quickly with a retry hint rather "
    "than with a growing heap. Large payloads are moved to an object store while the "
    "request waits in the queue so that the queue never carries big messages, and "
    "blobs are cleaned up after completion or when their time to live runs out. "
    "Every hop propagates the trace context so one request yields one trace."
)

LONG_GERMAN = (
    "Die Donaudampfschifffahrtsgesellschaft veröffentlichte im Frühjahr einen "
    "ausführlichen Bericht über die Überholung ihrer Flotte. Darin heißt es, dass die "
    "älteren Schiffe zunächst in der Werft in Linz überprüft, anschließend mit neuen "
    "Kesseln ausgestattet und schließlich von unabhängigen Gutachtern abgenommen "
    "werden müssen, bevor sie wieder Fahrgäste befördern dürfen. Die Geschäftsführung "
    "betonte, dass Sicherheit Vorrang vor Pünktlichkeit habe, räumte jedoch ein, dass "
    "die Verzögerungen im Sommerfahrplan für Ärger bei Reisenden und Gastwirten entlang "
    "des Flusses sorgen würden. Gewerkschaftsvertreter begrüßten die Investitionen, "
    "forderten aber zusätzliche Schulungen für das Personal an Bord, insbesondere für "
    "den Umgang mit der neuen elektronischen Steuerung und den Brandschutzanlagen. "
    "Umweltverbände wiesen darauf hin, dass die Umrüstung auf emissionsärmere Antriebe "
    "überfällig sei und kündigten an, die Fortschritte genau zu beobachten."
)

LONG_CHINESE = (
    "小模型集群的核心思想是让工作节点主动从共享队列中拉取任务，并根据自身测量得到的延迟模型"
    "来决定批次大小，而不是由中心路由器依据过时的状态信息把请求推送给它们。"
    "当请求数量很多而每个请求都很小时，自上而下的路由方式往往会导致批次大小不合适，"
    "图形处理器的利用率因此只有百分之二十到三十。"
    "采用拉取模式之后，每个工作节点只拿取它当前能够处理的工作，多拿的部分会通过网络退回，"
    "或者交给同一台机器上其他加速器共享的本地队列。"
    "只有在回复已经发布之后才确认消息，因此即使工作进程在批处理过程中被终止，也不会丢失任何请求。"
    "截止时间随工作一起传递，过期的工作不会被计算，过载时系统会快速返回重试提示，而不是让内存不断增长。"
)

# Two inputs that sit on the truncation boundary: "a" is one WordPiece token, so with
# [CLS] and [SEP] the first is exactly 256 tokens (kept whole) and the second is 257
# (cut to 256). Off-by-one errors in truncation show up here and nowhere else.
AT_LIMIT = " ".join(["a"] * (MAX_SEQ_LENGTH - 2))
OVER_LIMIT_BY_ONE = " ".join(["a"] * (MAX_SEQ_LENGTH - 1))

SENTENCES: list[str] = [
    # short and medium English
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "How do I reset my password if I no longer have access to my email account?",
    "Small models, many requests: workers pull from a shared queue and size their own batches.",
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "UPPERCASE AND lowercase Should Embed The Same Because The Model Is Uncased.",
    # single character and whitespace-only: both tokenize to almost nothing
    "a",
    "?",
    "   \t  ",
    # non-ASCII scripts
    "Der schnelle braune Fuchs springt über den faulen Hund. Grüße aus München!",
    "Où est la bibliothèque ? J'aimerais emprunter « Les Misérables » de Victor Hugo.",
    "Crème brûlée",
    "Cre\u0300me bru\u0302le\u0301e",  # same words in NFD form: accents as combining marks
    "我们今天下午在会议室讨论新的部署方案。",
    "東京の天気は明日晴れるでしょう。ラーメンを食べに行きませんか？",
    "مرحبا بالعالم، كيف حالك اليوم؟",
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    # emoji, punctuation, code, numbers, odd whitespace
    "I love this! 😍🔥👍🏽 Best day ever 🎉🎉🎉",
    "Wait... what?!?! -- (really) [yes] {no} <maybe> ;;; :: ,,, !!! ???",
    "def add(a: int, b: int) -> int:\n    return a + b  # type-annotated",
    'const x = await fetch("/v1/embeddings", { method: "POST", body: JSON.stringify({ input: ["hi"] }) });',
    "Order #48213 shipped on 2024-03-15 at 09:41:07 UTC; total $1,234.56 (incl. 19% VAT) -- 3.14159e-10",
    "tabs\tand\nnewlines\r\nand  double  spaces",
    # long inputs that exceed 256 tokens and are truncated
    LONG_ENGLISH,
    LONG_GERMAN,
    LONG_CHINESE,
    " ".join(str(n) for n in range(1, 300)),
    AT_LIMIT,
    OVER_LIMIT_BY_ONE,
]


def token_counts(model: SentenceTransformer, text: str) -> tuple[int, bool]:
    """Token ids after truncation (with [CLS]/[SEP]) and whether truncation happened."""
    tokenizer = model.tokenizer
    kept = tokenizer(text, truncation=True, max_length=model.max_seq_length)["input_ids"]
    # verbose=False: the untruncated length is meant to exceed the model's limit.
    full = tokenizer(text, truncation=False, verbose=False)["input_ids"]
    return len(kept), len(full) > model.max_seq_length


def main() -> int:
    model_dir = Path(os.environ.get("SHOAL_MINILM_DIR", Path.home() / ".cache/shoal/models/all-minilm-l6-v2"))
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "fixtures" / "all-minilm-l6-v2.json"
    if not (model_dir / "model.safetensors").is_file():
        print(f"make_minilm_fixture: no model at {model_dir}; run tools/setup/models.sh first", file=sys.stderr)
        return 1

    # One thread and one sentence per forward pass make the output independent of the
    # machine's core count and of padding inside a batch, so reruns are byte-identical.
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    model = SentenceTransformer(str(model_dir), device="cpu")
    model.eval()
    if model.max_seq_length != MAX_SEQ_LENGTH:
        raise SystemExit(f"expected max_seq_length {MAX_SEQ_LENGTH}, model says {model.max_seq_length}")
    module_types = [type(m).__name__ for m in model]
    if module_types[-1] != "Normalize":
        raise SystemExit(f"expected the model's last module to be Normalize, got {module_types}")

    records = []
    for text in SENTENCES:
        # normalize_embeddings stays False: the model's own Normalize module already
        # L2-normalises, and the fixture must be exactly what encode() returns.
        embedding = model.encode([text], batch_size=1, convert_to_numpy=True, normalize_embeddings=False)[0]
        values = [float(v) for v in embedding.tolist()]
        if len(values) != DIM:
            raise SystemExit(f"expected {DIM} dimensions, got {len(values)}")
        norm = math.sqrt(sum(v * v for v in values))
        if abs(norm - 1.0) > 1e-4:
            raise SystemExit(f"embedding of {text!r} has norm {norm}; the model should emit unit vectors")
        tokens, truncated = token_counts(model, text)
        records.append({"text": text, "embedding": values, "tokens": tokens, "truncated": truncated})

    header = {
        "model": MODEL_ID,
        "generator": {
            "sentence_transformers": sentence_transformers.__version__,
            "torch": torch.__version__,
            "transformers": transformers.__version__,
        },
        "max_seq_length": MAX_SEQ_LENGTH,
        "dim": DIM,
    }
    # One sentence per line keeps the file reviewable and its diffs readable; UTF-8 so
    # the non-ASCII inputs are legible. JSON's float repr round-trips float32 exactly.
    lines = ["{"]
    lines += [f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}," for k, v in header.items()]
    lines.append('  "sentences": [')
    lines += [
        "    " + json.dumps(r, ensure_ascii=False) + ("," if i < len(records) - 1 else "")
        for i, r in enumerate(records)
    ]
    lines += ["  ]", "}"]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    json.loads(tmp.read_text(encoding="utf-8"))  # refuse to publish a file that does not parse
    tmp.replace(out)
    n_truncated = sum(r["truncated"] for r in records)
    print(f"wrote {out}: {len(records)} sentences, {n_truncated} truncated", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
