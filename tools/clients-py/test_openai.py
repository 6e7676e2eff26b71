"""The official OpenAI Python SDK pointed at Shoal's OpenAI-compatible REST API."""

import base64
import struct

import openai
import pytest

from helpers import DIMENSIONS, MINILM, as_float32, norm

INPUTS = ["hello world", "the cluster pulls its own batches"]


@pytest.fixture
def client(shoal_url: str) -> openai.OpenAI:
    # Shoal asks for no key, but the SDK requires one. No retries: a 5xx must fail the test,
    # not be hidden behind a second attempt.
    return openai.OpenAI(base_url=f"{shoal_url}/v1", api_key="unused", max_retries=0)


def test_float_embeddings(client: openai.OpenAI) -> None:
    response = client.embeddings.create(model=MINILM, input=INPUTS, encoding_format="float")
    assert response.model == MINILM
    assert [d.index for d in response.data] == [0, 1]
    for item in response.data:
        assert len(item.embedding) == DIMENSIONS
        assert norm(item.embedding) == pytest.approx(1, abs=1e-5)
    assert response.usage.prompt_tokens == response.usage.total_tokens > 0


def test_default_request_is_base64_decoded_by_the_sdk(client: openai.OpenAI) -> None:
    # Without encoding_format the SDK asks for base64 and decodes it into floats itself.
    floats = client.embeddings.create(model=MINILM, input=INPUTS, encoding_format="float")
    decoded = client.embeddings.create(model=MINILM, input=INPUTS)
    # JSON writes float32 in nine digits, which read back to the same float32.
    assert [d.embedding for d in decoded.data] == [as_float32(d.embedding) for d in floats.data]


def test_explicit_base64_is_little_endian_float32(client: openai.OpenAI) -> None:
    floats = client.embeddings.create(model=MINILM, input=INPUTS, encoding_format="float")
    b64 = client.embeddings.create(model=MINILM, input=INPUTS, encoding_format="base64")
    for raw, want in zip(b64.data, floats.data, strict=True):
        assert isinstance(raw.embedding, str)
        assert list(struct.unpack(f"<{DIMENSIONS}f", base64.b64decode(raw.embedding))) == (
            as_float32(want.embedding)
        )


def test_models_list(client: openai.OpenAI) -> None:
    models = client.models.list()
    assert MINILM in [m.id for m in models]
    assert all(m.object == "model" for m in models)


def test_unknown_model_is_not_found(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as raised:
        client.embeddings.create(model="nope/nope", input=["x"])
    assert raised.value.status_code == 404
    assert f"available: {MINILM}" in raised.value.message


def test_empty_input_is_bad_request(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        client.embeddings.create(model=MINILM, input=[])
    assert raised.value.status_code == 400
    assert "input must not be empty" in raised.value.message


def test_token_ids_embed_like_their_text(client: openai.OpenAI) -> None:
    # MiniLM's WordPiece ids for "hello world", without [CLS]/[SEP]; base64 is the SDK default.
    by_ids = client.embeddings.create(model=MINILM, input=[[7592, 2088]])
    by_text = client.embeddings.create(model=MINILM, input=["hello world"])
    dot = sum(a * b for a, b in zip(by_ids.data[0].embedding, by_text.data[0].embedding))
    assert dot == pytest.approx(1, abs=1e-5)


def test_dimensions_on_a_model_not_trained_for_truncation_is_bad_request(
    client: openai.OpenAI,
) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        client.embeddings.create(model=MINILM, input=["x"], dimensions=128)
    assert "cannot be truncated" in raised.value.message
