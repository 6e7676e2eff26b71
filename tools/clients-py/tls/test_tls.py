"""The official OpenAI Python SDK and grpcio against ingress serving HTTPS.

Run by services/ingress/test/tls.test.ts with SHOAL_URL an https:// address, SHOAL_CA the CA
that signed ingress's certificate and SHOAL_MODEL an embedding model it serves.
"""

import os
from urllib.parse import urlsplit

import grpc
import openai
import pytest

from helpers import Stubs


def setting(name: str) -> str:
    value = os.environ.get(name, "")
    if value == "":
        raise pytest.UsageError(f"{name} is not set (services/ingress/test/tls.test.ts sets it)")
    return value


def test_openai_over_https_trusting_the_ca(shoal_url: str) -> None:
    # The SDK's own HTTP client, told which CA to trust, as a user behind a private CA does.
    with openai.DefaultHttpxClient(verify=setting("SHOAL_CA")) as http:
        client = openai.OpenAI(
            base_url=f"{shoal_url}/v1", api_key="unused", max_retries=0, http_client=http
        )
        answer = client.embeddings.create(model=setting("SHOAL_MODEL"), input=["a", "b"])
    assert len(answer.data) == 2


def test_grpcio_over_tls_trusting_the_ca(shoal_url: str, stubs: Stubs) -> None:
    with open(setting("SHOAL_CA"), "rb") as ca:
        credentials = grpc.ssl_channel_credentials(root_certificates=ca.read())
    with grpc.secure_channel(urlsplit(shoal_url).netloc, credentials) as channel:
        service = stubs.pb2_grpc.InferenceServiceStub(channel)
        request = stubs.pb2.EmbedRequest(model=setting("SHOAL_MODEL"), inputs=["a"])
        assert len(service.Embed(request, timeout=30).embeddings) == 1
