"""A grpcio client, generated from proto/ at test time, calling Score and Extract.

Run by services/ingress/test/rerank-extract.test.ts against the cluster it starts, which
serves the tiny generated reranker, NER model and classifier; the expected outputs are the
transformers references in tools/reference/fixtures/.
"""

import json
from collections.abc import Iterator
from urllib.parse import urlsplit

import grpc
import pytest

from helpers import REPO, Stubs

CROSS_ENCODER = "shoal/tiny-cross-encoder"
NER = "shoal/tiny-ner"
CLASSIFIER = "shoal/tiny-classifier"


def fixture(name: str) -> dict:
    path = REPO / "tools" / "reference" / "fixtures" / f"tiny-{name}.json"
    return json.loads(path.read_text())


@pytest.fixture
def service(shoal_url: str, stubs: Stubs) -> Iterator[object]:
    with grpc.insecure_channel(urlsplit(shoal_url).netloc) as channel:
        yield stubs.pb2_grpc.InferenceServiceStub(channel)


def test_score_matches_the_reference_scores_in_document_order(service, stubs: Stubs) -> None:
    pairs = fixture("cross-encoder")["pairs"]
    query = pairs[0]["query"]
    same = [p for p in pairs if p["query"] == query]
    response = service.Score(
        stubs.pb2.ScoreRequest(
            model=CROSS_ENCODER, query=query, documents=[p["document"] for p in same]
        ),
        timeout=60,
    )
    assert response.model == CROSS_ENCODER
    assert list(response.scores) == pytest.approx([p["score"] for p in same], abs=1e-4)
    assert response.usage.input_tokens > 0


def test_extract_finds_the_reference_entities(service, stubs: Stubs) -> None:
    inputs = fixture("ner")["inputs"]
    response = service.Extract(
        stubs.pb2.ExtractRequest(model=NER, inputs=[i["text"] for i in inputs]), timeout=60
    )
    assert len(response.results) == len(inputs)
    for got, want in zip(response.results, inputs, strict=True):
        assert [(e.label, e.text, e.start, e.end) for e in got.entities] == [
            (e["label"], e["text"], e["start"], e["end"]) for e in want["entities"]
        ]
        assert [e.score for e in got.entities] == pytest.approx(
            [e["score"] for e in want["entities"]], abs=1e-4
        )


def test_extract_labels_with_a_classifier_most_probable_first(service, stubs: Stubs) -> None:
    reference = fixture("classifier")
    inputs = reference["inputs"]
    response = service.Extract(
        stubs.pb2.ExtractRequest(model=CLASSIFIER, inputs=[i["text"] for i in inputs]),
        timeout=60,
    )
    for got, want in zip(response.results, inputs, strict=True):
        expected = sorted(
            zip(reference["labels"], want["probabilities"], strict=True),
            key=lambda pair: -pair[1],
        )
        assert [label.label for label in got.labels] == [label for label, _ in expected]
        assert [label.probability for label in got.labels] == pytest.approx(
            [p for _, p in expected], abs=1e-4
        )


def test_score_of_a_token_classifier_names_its_family(service, stubs: Stubs) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        service.Score(
            stubs.pb2.ScoreRequest(model=NER, query="q", documents=["d"]), timeout=30
        )
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "token-classifier" in raised.value.details()


def test_extract_with_a_deadline_already_past(service, stubs: Stubs) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        service.Extract(stubs.pb2.ExtractRequest(model=NER, inputs=["x"]), timeout=0.000001)
    assert raised.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
