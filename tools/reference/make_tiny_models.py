"""Tiny random-weight task models and their reference outputs, for the sidecar's head tests.

No real cross-encoder, classifier or NER checkpoint can be fetched here (no Hugging Face
hub; none ships in a registry package), so this script makes three small BERT models in
the real Hugging Face layout (config.json, tokenizer.json, tokenizer_config.json,
model.safetensors), exactly as `save_pretrained` writes them:

- `cross-encoder`: BertForSequenceClassification with one label, the layout of
  cross-encoder/ms-marco-MiniLM-L-6-v2 (a reranker, scored with the sigmoid of its logit);
- `classifier`: BertForSequenceClassification with three labels (softmax);
- `ner`: BertForTokenClassification with the IOB2 labels O, B-/I-PER, ORG, LOC, MISC, the
  layout of dslim/bert-base-NER.

Then it records what transformers on torch answers for each, in
`fixtures/tiny-<name>.json`: scores and probabilities from the model's logits, and NER
entities from `pipeline("token-classification", aggregation_strategy="simple")`.

Weights are random but seeded, so a rerun with the same requirements.txt writes the same
files. The NER head is biased towards `I-` labels (see `NER_BIAS`) so that random weights
still tag multi-token entities; every token's winning probability must beat the runner-up
by `MIN_MARGIN`, so float differences between implementations cannot flip a label.

Run through regenerate.sh, or with the reference venv's python:
    python make_tiny_models.py [output-directory]      (default: fixtures/ beside it)
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
import safetensors  # noqa: E402
import tokenizers  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import (  # noqa: E402
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    AutoTokenizer,
    BertConfig,
    BertForSequenceClassification,
    BertForTokenClassification,
    BertTokenizer,
    pipeline,
)

SEED = 20260
# Short enough that the long inputs below are truncated without making them huge.
MAX_TOKENS = 64
NER_LABELS = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]
CLASSIFIER_LABELS = ["negative", "neutral", "positive"]
# Added to the NER head's logits: B- labels are rarer than I- labels, so that runs of one
# I- type form entities longer than one token, as they do in real text.
NER_BIAS = [2.4, -1.0, 1.5, -1.0, 1.5, -1.0, 1.5, -1.5, 1.0]
MIN_MARGIN = 1e-3
CLASSIFIER_HEAD_SCALE = 6.0
NER_HEAD_SCALE = 3.0

WORDS = """
the a an of to in and or is was are be for on at by with from as it that this his her
their new city river company bank north south east west who what where when why how
shoal cluster model models small fleet queue worker workers batch batches gpu request
requests reply answer query document search engine rank rerank score scores label
people person man woman moved lives live worked works work visited met founded born
paris london berlin zurich munich tokyo beijing moscow cairo york new angela merkel
jose muller marie curie alan turing ada lovelace google apple microsoft united nations
university museum station street park hotel day year years time good bad great terrible
love hate fine okay service food price cheap slow fast very not really quite movie book
film music song weather today yesterday tomorrow happy sad angry calm best worst ever
never always often cat cats dog dogs sat mat ran fast tree trees water fire earth
""".split()
SUBWORDS = ["##s", "##ed", "##ing", "##er", "##ly", "##ion", "##al", "##es", "##en", "##ch"]
# Characters the test inputs contain outside ASCII letters; with lower-casing and accent
# stripping, the Latin ones normalise to ASCII, so only the others need entries.
SCRIPT_CHARS = "中国北京东日本人我在工作的是和москвалюблюямрпиетсдгзжхцчшщыэ"
PUNCTUATION = ".,!?'\"-:;()@#&/%$+*=[]"


def build_vocab() -> dict[str, int]:
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    singles = list("abcdefghijklmnopqrstuvwxyz0123456789") + list(PUNCTUATION) + list(SCRIPT_CHARS)
    tokens += singles
    tokens += ["##" + c for c in "abcdefghijklmnopqrstuvwxyz0123456789"]
    tokens += ["##" + c for c in SCRIPT_CHARS]
    tokens += SUBWORDS
    tokens += WORDS
    vocab: dict[str, int] = {}
    for token in tokens:
        vocab.setdefault(token, len(vocab))
    return vocab


def config(vocab_size: int, **task) -> BertConfig:
    return BertConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        hidden_act="gelu",
        max_position_embeddings=MAX_TOKENS,
        type_vocab_size=2,
        # Larger than BERT's 0.02 so that a random model's outputs depend visibly on the input.
        initializer_range=0.2,
        layer_norm_eps=1e-12,
        **task,
    )


def save(model, tokenizer, directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory, safe_serialization=True)
    tokenizer.save_pretrained(directory)
    # Only the files of the real layout the sidecar reads are kept; vocab.txt and
    # special_tokens_map.json duplicate tokenizer.json.
    for extra in ("vocab.txt", "special_tokens_map.json"):
        (directory / extra).unlink(missing_ok=True)


LONG_TEXT = (
    "Angela Merkel visited the Shoal cluster in Berlin and met the workers of the company "
    "who founded the queue. Alan Turing and Ada Lovelace worked at the university in "
    "London, and Marie Curie lived in Paris near the river. The new model ranked every "
    "document, and the batch of requests was answered by the fleet of small models very "
    "fast, never slow, always on time, every day of every year."
)

PAIRS = [
    ("what is a shoal cluster", "a shoal cluster serves fleets of small models"),
    ("what is a shoal cluster", "the cat sat on the mat"),
    ("where does angela merkel live", "Angela Merkel lives in Berlin."),
    ("Wo liegt Zürich?", "Zürich liegt am Zürichsee in der Schweiz."),
    ("北京在哪里", "北京是中国的首都"),
    ("москва", "я люблю москву"),
    ("emoji 🚀 query", "🚀🚀 rockets and 🌊 waves"),
    ("", "an empty query"),
    ("a query", ""),
    ("short query", LONG_TEXT),
    (LONG_TEXT, LONG_TEXT.upper()),
    ("rank the best document " * 16, "the best document"),
]

TEXTS = [
    "I love this movie, it is great!",
    "The service was terrible and the food was bad.",
    "It is okay.",
    "Das Essen war großartig, aber der Service war langsam.",
    "这部电影很好",
    "Я люблю Москву.",
    "🙂🙂🙂",
    "",
    "   ",
    LONG_TEXT,
]

NER_TEXTS = [
    "Angela Merkel visited Paris and met the workers of Google.",
    "Alan Turing worked at the University of London with Ada Lovelace.",
    "José Müller moved from Zürich to München in 2019.",
    "Marie Curie was born in Warsaw; she lived in Paris.",
    "我在北京工作, 东京是日本的.",
    "Москва is a city on the river.",
    "The United Nations met in New York 🗽 yesterday.",
    "apple and microsoft are companies, paris is a city",
    "",
    "no entities here at all",
    LONG_TEXT,
]


# Texts go to the tokenizer as one-element batches, as sentence-transformers' CrossEncoder
# sends them: called on a single pair, transformers drops an empty second text (`if
# text_pair`), while in a batch it keeps it as an empty segment, `[CLS] q [SEP] [SEP]`.
def token_count(tokenizer, *texts: str) -> tuple[int, bool]:
    batch = [[t] for t in texts]
    kept = len(tokenizer(*batch, truncation=True, max_length=MAX_TOKENS)["input_ids"][0])
    full = len(tokenizer(*batch, truncation=False)["input_ids"][0])
    return kept, full > MAX_TOKENS


def logits(model, tokenizer, *texts: str) -> np.ndarray:
    batch = [[t] for t in texts]
    encoded = tokenizer(*batch, truncation=True, max_length=MAX_TOKENS, return_tensors="pt")
    with torch.no_grad():
        return model(**encoded).logits[0].to(torch.float64).numpy()


def generator() -> str:
    return (
        f"transformers {transformers.__version__}, torch {torch.__version__}, "
        f"tokenizers {tokenizers.__version__}, safetensors {safetensors.__version__}"
    )


def make_cross_encoder(vocab: dict[str, int], root: Path, fixtures: Path) -> None:
    torch.manual_seed(SEED)
    model = BertForSequenceClassification(config(len(vocab), num_labels=1)).eval()
    tokenizer = BertTokenizer(vocab=vocab, model_max_length=MAX_TOKENS)
    directory = root / "cross-encoder"
    save(model, tokenizer, directory)
    model = AutoModelForSequenceClassification.from_pretrained(directory).eval()
    tokenizer = AutoTokenizer.from_pretrained(directory)
    pairs = []
    for query, document in PAIRS:
        logit = logits(model, tokenizer, query, document)
        tokens, truncated = token_count(tokenizer, query, document)
        pairs.append(
            {
                "query": query,
                "document": document,
                "logit": float(logit[0]),
                "score": float(1.0 / (1.0 + np.exp(-logit[0]))),
                "tokens": tokens,
                "truncated": truncated,
            }
        )
    scores = [p["score"] for p in pairs]
    assert max(scores) - min(scores) > 0.05, f"scores barely depend on the input: {scores}"
    assert any(p["truncated"] for p in pairs)
    write(fixtures / "tiny-cross-encoder.json", {"model": "tiny/cross-encoder", "pairs": pairs})


def make_classifier(vocab: dict[str, int], root: Path, fixtures: Path) -> None:
    torch.manual_seed(SEED + 1)
    id2label = dict(enumerate(CLASSIFIER_LABELS))
    model = BertForSequenceClassification(
        config(
            len(vocab),
            id2label=id2label,
            label2id={v: k for k, v in id2label.items()},
            problem_type="single_label_classification",
        )
    ).eval()
    tokenizer = BertTokenizer(vocab=vocab, model_max_length=MAX_TOKENS)
    with torch.no_grad():
        # A random pooler feeds the head nearly the same vector for every input: a wider
        # head, centred on the test inputs' mean pooled vector, spreads the winners over
        # the labels.
        pooled = torch.stack(
            [
                model.bert(**tokenizer(t, truncation=True, return_tensors="pt")).pooler_output[0]
                for t in TEXTS
            ]
        )
        model.classifier.weight.mul_(CLASSIFIER_HEAD_SCALE)
        model.classifier.bias.copy_(-model.classifier.weight @ pooled.mean(0))
    directory = root / "classifier"
    save(model, tokenizer, directory)
    model = AutoModelForSequenceClassification.from_pretrained(directory).eval()
    tokenizer = AutoTokenizer.from_pretrained(directory)
    inputs = []
    for text in TEXTS:
        row = logits(model, tokenizer, text)
        probabilities = np.exp(row - row.max())
        probabilities /= probabilities.sum()
        tokens, truncated = token_count(tokenizer, text)
        inputs.append(
            {
                "text": text,
                "probabilities": [float(p) for p in probabilities],
                "tokens": tokens,
                "truncated": truncated,
            }
        )
    winners = {int(np.argmax(i["probabilities"])) for i in inputs}
    assert len(winners) >= 2, "every input gets the same label"
    write(
        fixtures / "tiny-classifier.json",
        {"model": "tiny/classifier", "labels": CLASSIFIER_LABELS, "inputs": inputs},
    )


def make_ner(vocab: dict[str, int], root: Path, fixtures: Path) -> None:
    torch.manual_seed(SEED + 2)
    id2label = dict(enumerate(NER_LABELS))
    model = BertForTokenClassification(
        config(len(vocab), id2label=id2label, label2id={v: k for k, v in id2label.items()})
    ).eval()
    tokenizer = BertTokenizer(vocab=vocab, model_max_length=MAX_TOKENS)
    with torch.no_grad():
        # As for the classifier: centre a wider head on the test tokens' mean hidden state,
        # then favour I- labels so that entities span several tokens.
        hidden = torch.cat(
            [
                model.bert(**tokenizer(t, truncation=True, return_tensors="pt")).last_hidden_state[0]
                for t in NER_TEXTS
            ]
        )
        model.classifier.weight.mul_(NER_HEAD_SCALE)
        centre = -model.classifier.weight @ hidden.mean(0)
        model.classifier.bias.copy_(centre + torch.tensor(NER_BIAS))
    directory = root / "ner"
    save(model, tokenizer, directory)
    model = AutoModelForTokenClassification.from_pretrained(directory).eval()
    tokenizer = AutoTokenizer.from_pretrained(directory)
    tagger = pipeline(
        "token-classification",
        model=model,
        tokenizer=tokenizer,
        aggregation_strategy="simple",
        device="cpu",
    )
    inputs = []
    for text in NER_TEXTS:
        row = logits(model, tokenizer, text)
        top2 = np.sort(row, axis=-1)[:, -2:]
        probabilities = np.exp(top2 - row.max(axis=-1, keepdims=True))
        probabilities /= np.exp(row - row.max(axis=-1, keepdims=True)).sum(axis=-1, keepdims=True)
        margin = float((probabilities[:, 1] - probabilities[:, 0]).min())
        assert margin > MIN_MARGIN, f"{text!r}: two labels within {margin} of each other"
        entities = [
            {
                "label": e["entity_group"],
                "text": text[e["start"] : e["end"]],
                "start": int(e["start"]),
                "end": int(e["end"]),
                "score": float(e["score"]),
            }
            for e in (tagger(text) if text else [])
        ]
        tokens, truncated = token_count(tokenizer, text)
        inputs.append({"text": text, "entities": entities, "tokens": tokens, "truncated": truncated})
    spans = [e for i in inputs for e in i["entities"]]
    multi = [e for e in spans if len(tokenizer(e["text"], add_special_tokens=False)["input_ids"]) > 1]
    assert len({e["label"] for e in spans}) >= 3, "too few entity types to test anything"
    assert len(multi) >= 5, "too few multi-token entities"
    write(fixtures / "tiny-ner.json", {"model": "tiny/ner", "labels": NER_LABELS, "inputs": inputs})


def write(path: Path, body: dict) -> None:
    body = {"generator": generator(), "max_input_tokens": MAX_TOKENS, **body}
    path.write_text(json.dumps(body, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {path}", file=sys.stderr)


def main() -> None:
    fixtures = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "fixtures"
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    root = fixtures / "tiny"
    vocab = build_vocab()
    make_cross_encoder(vocab, root, fixtures)
    make_classifier(vocab, root, fixtures)
    make_ner(vocab, root, fixtures)


if __name__ == "__main__":
    main()
