"""The Python gRPC client a user generates from proto/ with grpcio-tools, over HTTP/2 cleartext."""

from collections.abc import Iterator
from urllib.parse import urlsplit

import grpc
import pytest

from helpers import DIMENSIONS, MINILM, FixtureSentence, Stubs, cosine, norm


@pytest.fixture
def service(shoal_url: str, stubs: Stubs) -> Iterator[object]:
    target = urlsplit(shoal_url).netloc
    with grpc.insecure_channel(target) as channel:
        yield stubs.pb2_grpc.InferenceServiceStub(channel)


def test_embed_returns_the_reference_vectors(
    service, stubs: Stubs, reference: list[FixtureSentence]
) -> None:
    sentences = reference[:5]
    response = service.Embed(
        stubs.pb2.EmbedRequest(model=MINILM, inputs=[s.text for s in sentences]), timeout=30
    )
    assert response.model == MINILM
    assert len(response.embeddings) == len(sentences)
    for got, want in zip(response.embeddings, sentences, strict=True):
        assert len(got.values) == DIMENSIONS
        assert norm(list(got.values)) == pytest.approx(1, abs=1e-5)
        assert cosine(list(got.values), want.embedding) >= 0.9999, want.text
        assert got.tokens == want.tokens
    assert response.usage.input_tokens == sum(s.tokens for s in sentences)


def test_embed_sends_server_timing_metadata(service, stubs: Stubs) -> None:
    _, call = service.Embed.with_call(
        stubs.pb2.EmbedRequest(model=MINILM, inputs=["hello world"]), timeout=30
    )
    metadata = dict(call.initial_metadata())
    assert "queue;dur=" in metadata["server-timing"]


def test_list_models_describes_the_catalog(service, stubs: Stubs) -> None:
    response = service.ListModels(stubs.pb2.ListModelsRequest(), timeout=10)
    minilm = next(m for m in response.models if m.id == MINILM)
    assert minilm.family == stubs.pb2.MODEL_FAMILY_EMBEDDING
    assert minilm.dimensions == DIMENSIONS
    assert minilm.max_input_tokens == 256


def test_unknown_model_is_not_found_with_the_available_models(service, stubs: Stubs) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        service.Embed(stubs.pb2.EmbedRequest(model="nope/nope", inputs=["x"]), timeout=10)
    assert raised.value.code() == grpc.StatusCode.NOT_FOUND
    prefix = 'model "nope/nope" is not served here; available: '
    details = raised.value.details()
    assert details.startswith(prefix)
    assert MINILM in details[len(prefix) :].split(", ")


@pytest.mark.parametrize(
    ("inputs", "details"),
    [([], "input must not be empty"), (["ok", ""], "input 1 is an empty string")],
    ids=["empty inputs", "an empty string"],
)
def test_bad_inputs_are_invalid_argument(
    service, stubs: Stubs, inputs: list[str], details: str
) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        service.Embed(stubs.pb2.EmbedRequest(model=MINILM, inputs=inputs), timeout=10)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert raised.value.details() == details


@pytest.mark.parametrize("attempt", range(10))
def test_a_deadline_too_short_to_meet_is_deadline_exceeded(
    service, stubs: Stubs, attempt: int
) -> None:
    # 1 ms cannot cover annotate, queue and compute. Whether grpcio's own timer or ingress's
    # answer comes first, the client sees DEADLINE_EXCEEDED; several calls, because ingress's
    # deadline can fire at any point of its handling, including while the work is being queued.
    with pytest.raises(grpc.RpcError) as raised:
        service.Embed(
            stubs.pb2.EmbedRequest(model=MINILM, inputs=[f"too late {attempt}"]), timeout=0.001
        )
    assert raised.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED


def test_the_channel_keeps_serving_after_an_expired_call(service, stubs: Stubs) -> None:
    with pytest.raises(grpc.RpcError):
        service.Embed(stubs.pb2.EmbedRequest(model=MINILM, inputs=["too late"]), timeout=0.001)
    response = service.Embed(stubs.pb2.EmbedRequest(model=MINILM, inputs=["on time"]), timeout=30)
    assert len(response.embeddings[0].values) == DIMENSIONS
