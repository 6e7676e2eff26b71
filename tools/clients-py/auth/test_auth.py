"""The official OpenAI Python SDK and grpcio against ingress with SHOAL_AUTH=keys.

Run by services/ingress/test/auth.test.ts, which creates the tenant and key (SHOAL_API_KEY),
grants it SHOAL_GRANTED_MODEL but not SHOAL_UNGRANTED_MODEL, and publishes another tenant's
private adapter (SHOAL_HIDDEN_ADAPTER).
"""

import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from urllib.parse import urlsplit

import grpc
import openai
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from helpers import Stubs


def setting(name: str) -> str:
    value = os.environ.get(name, "")
    if value == "":
        raise pytest.UsageError(f"{name} is not set (services/ingress/test/auth.test.ts sets it)")
    return value


def client(shoal_url: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{shoal_url}/v1", api_key=key, max_retries=0)


@pytest.fixture
def channel(shoal_url: str) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(urlsplit(shoal_url).netloc) as opened:
        yield opened


def test_a_valid_key_embeds_and_lists_its_models(shoal_url: str) -> None:
    keyed = client(shoal_url, setting("SHOAL_API_KEY"))
    model = setting("SHOAL_GRANTED_MODEL")
    assert len(keyed.embeddings.create(model=model, input=["a", "b"]).data) == 2
    listed = {m.id for m in keyed.models.list().data}
    assert model in listed
    assert setting("SHOAL_UNGRANTED_MODEL") not in listed
    assert setting("SHOAL_HIDDEN_ADAPTER") not in listed


def test_missing_wrong_ungranted_and_hidden_get_401_403_404(shoal_url: str) -> None:
    key = setting("SHOAL_API_KEY")
    # The SDK refuses to send without a key; a plain HTTP client does.
    bare = urllib.request.Request(
        f"{shoal_url}/v1/models", headers={"content-type": "application/json"}
    )
    with pytest.raises(urllib.error.HTTPError) as unauthenticated:
        urllib.request.urlopen(bare, timeout=10)
    assert unauthenticated.value.code == 401
    assert unauthenticated.value.headers["www-authenticate"].startswith("Bearer")
    for wrong in ["sk-not-shoal", key[:-1] + ("A" if key[-1] != "A" else "B")]:
        with pytest.raises(openai.AuthenticationError):
            client(shoal_url, wrong).embeddings.create(
                model=setting("SHOAL_GRANTED_MODEL"), input="x"
            )
    keyed = client(shoal_url, key)
    with pytest.raises(openai.PermissionDeniedError):
        keyed.embeddings.create(model=setting("SHOAL_UNGRANTED_MODEL"), input="x")
    with pytest.raises(openai.NotFoundError):
        keyed.chat.completions.create(
            model=setting("SHOAL_HIDDEN_ADAPTER"),
            messages=[{"role": "user", "content": "hi"}],
            max_tokens=2,
        )


def test_grpcio_sends_the_key_as_metadata(channel: grpc.Channel, stubs: Stubs) -> None:
    service = stubs.pb2_grpc.InferenceServiceStub(channel)
    request = stubs.pb2.EmbedRequest(model=setting("SHOAL_GRANTED_MODEL"), inputs=["a"])
    bearer = (("authorization", f"Bearer {setting('SHOAL_API_KEY')}"),)
    assert len(service.Embed(request, metadata=bearer, timeout=30).embeddings) == 1
    with pytest.raises(grpc.RpcError) as unauthenticated:
        service.Embed(request, timeout=30)
    assert unauthenticated.value.code() == grpc.StatusCode.UNAUTHENTICATED
    ungranted = stubs.pb2.EmbedRequest(model=setting("SHOAL_UNGRANTED_MODEL"), inputs=["a"])
    with pytest.raises(grpc.RpcError) as denied:
        service.Embed(ungranted, metadata=bearer, timeout=30)
    assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED


def test_health_needs_no_key(channel: grpc.Channel) -> None:
    health = health_pb2_grpc.HealthStub(channel)
    response = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=10)
    assert response.status == health_pb2.HealthCheckResponse.SERVING
