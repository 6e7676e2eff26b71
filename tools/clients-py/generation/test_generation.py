"""The official OpenAI Python SDK and a grpcio client against a cluster serving SmolLM2.

Run by services/ingress/test/openai-generation.test.ts against the cluster it starts; kept
apart from the embedding suite beside it, which runs against a cluster without a generator.
"""

from collections.abc import Iterator
from urllib.parse import urlsplit

import grpc
import openai
import pytest

from helpers import Stubs

SMOLLM2 = "HuggingFaceTB/SmolLM2-135M-Instruct"
MESSAGES = [{"role": "user", "content": "Name three colours of the rainbow."}]


@pytest.fixture
def client(shoal_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{shoal_url}/v1", api_key="unused", max_retries=0)


@pytest.fixture
def service(shoal_url: str, stubs: Stubs) -> Iterator[object]:
    with grpc.insecure_channel(urlsplit(shoal_url).netloc) as channel:
        yield stubs.pb2_grpc.InferenceServiceStub(channel)


def greedy(client: openai.OpenAI) -> str:
    response = client.chat.completions.create(
        model=SMOLLM2, messages=MESSAGES, max_tokens=16, temperature=0
    )
    return response.choices[0].message.content or ""


def test_chat_streamed_and_not_give_the_same_greedy_text(client: openai.OpenAI) -> None:
    whole = greedy(client)
    assert whole.strip() != ""
    chunks = list(
        client.chat.completions.create(
            model=SMOLLM2,
            messages=MESSAGES,
            max_tokens=16,
            temperature=0,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0


def test_completions(client: openai.OpenAI) -> None:
    response = client.completions.create(
        model=SMOLLM2, prompt="The capital of France is", max_tokens=8, temperature=0
    )
    assert response.choices[0].text != ""
    assert response.usage is not None and response.usage.completion_tokens > 0


def test_bad_input_is_a_bad_request(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError, match="n must be an integer"):
        client.chat.completions.create(model=SMOLLM2, messages=MESSAGES, n=9)
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="nope/nope", messages=MESSAGES)


def test_grpc_generate_streams_the_same_text(
    client: openai.OpenAI, service, stubs: Stubs
) -> None:
    pb2 = stubs.pb2
    request = pb2.GenerateRequest(
        model=SMOLLM2,
        chat=pb2.ChatMessages(messages=[pb2.ChatMessage(**m) for m in MESSAGES]),
        sampling=pb2.SamplingParams(max_tokens=16, temperature=0),
    )
    messages = list(service.Generate(request, timeout=120))
    assert len(messages) > 2
    assert messages[-1].usage.output_tokens > 0
    assert "".join(m.delta for m in messages) == greedy(client)


def test_grpc_generate_deadline_already_past(service, stubs: Stubs) -> None:
    request = stubs.pb2.GenerateRequest(model=SMOLLM2, prompt="hi")
    with pytest.raises(grpc.RpcError) as raised:
        list(service.Generate(request, timeout=0.000001))
    assert raised.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
