"""The official OpenAI Python SDK and a grpcio client naming a LoRA adapter as `base:adapter`.

Run by services/ingress/test/adapters.test.ts against the cluster it starts, after it has
published the adapter named by SHOAL_ADAPTER (`<base id>:<name>`).
"""

import os
from collections.abc import Iterator
from urllib.parse import urlsplit

import grpc
import openai
import pytest

from helpers import Stubs

MESSAGES = [{"role": "user", "content": "Write a short poem about the sea, please."}]


@pytest.fixture(scope="module")
def adapter() -> str:
    name = os.environ.get("SHOAL_ADAPTER", "")
    if ":" not in name:
        raise pytest.UsageError("SHOAL_ADAPTER must name a published adapter as <base>:<name>")
    return name


@pytest.fixture
def client(shoal_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{shoal_url}/v1", api_key="unused", max_retries=0)


@pytest.fixture
def service(shoal_url: str, stubs: Stubs) -> Iterator[object]:
    with grpc.insecure_channel(urlsplit(shoal_url).netloc) as channel:
        yield stubs.pb2_grpc.InferenceServiceStub(channel)


def answer(client: openai.OpenAI, model: str) -> str:
    response = client.chat.completions.create(
        model=model, messages=MESSAGES, max_tokens=16, temperature=0
    )
    assert response.model == model
    return response.choices[0].message.content or ""


def test_the_adapter_is_listed_and_answers_differently_from_its_base(
    client: openai.OpenAI, adapter: str
) -> None:
    listed = {m.id: m for m in client.models.list().data}
    assert adapter in listed
    base = adapter.split(":", 1)[0]
    assert base in listed
    adapted = answer(client, adapter)
    assert adapted.strip() != ""
    assert adapted != answer(client, base)


def test_unknown_adapters_are_not_found_and_bad_names_bad_requests(
    client: openai.OpenAI, adapter: str
) -> None:
    base = adapter.split(":", 1)[0]
    with pytest.raises(openai.NotFoundError):
        answer(client, f"{base}:nobody-here")
    with pytest.raises(openai.BadRequestError):
        answer(client, f"{base}:Not A Name")


def test_grpc_generate_with_the_adapter_streams_its_text(
    client: openai.OpenAI, service, stubs: Stubs, adapter: str
) -> None:
    pb2 = stubs.pb2
    request = pb2.GenerateRequest(
        model=adapter,
        chat=pb2.ChatMessages(messages=[pb2.ChatMessage(**m) for m in MESSAGES]),
        sampling=pb2.SamplingParams(max_tokens=16, temperature=0),
    )
    messages = list(service.Generate(request, timeout=120))
    assert "".join(m.delta for m in messages) == answer(client, adapter)
    unknown = pb2.GenerateRequest(model=f"{adapter}-nope", prompt="hi")
    with pytest.raises(grpc.RpcError) as raised:
        list(service.Generate(unknown, timeout=60))
    assert raised.value.code() == grpc.StatusCode.NOT_FOUND
