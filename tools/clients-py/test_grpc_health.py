"""grpcio-health-checking's stub against ingress's grpc.health.v1.Health, as a probe would use it."""

from collections.abc import Iterator
from urllib.parse import urlsplit

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

INFERENCE = "shoal.inference.v1.InferenceService"


@pytest.fixture
def health(shoal_url: str) -> Iterator[health_pb2_grpc.HealthStub]:
    with grpc.insecure_channel(urlsplit(shoal_url).netloc) as channel:
        yield health_pb2_grpc.HealthStub(channel)


@pytest.mark.parametrize("service", ["", INFERENCE], ids=["server", "inference service"])
def test_check_is_serving(health: health_pb2_grpc.HealthStub, service: str) -> None:
    response = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
    assert response.status == health_pb2.HealthCheckResponse.SERVING


def test_check_of_an_unknown_service_is_not_found(health: health_pb2_grpc.HealthStub) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        health.Check(health_pb2.HealthCheckRequest(service="shoal.nope.v1.NopeService"), timeout=10)
    assert raised.value.code() == grpc.StatusCode.NOT_FOUND


def test_watch_starts_with_the_current_status(health: health_pb2_grpc.HealthStub) -> None:
    stream = health.Watch(health_pb2.HealthCheckRequest(service=INFERENCE), timeout=10)
    try:
        assert next(stream).status == health_pb2.HealthCheckResponse.SERVING
    finally:
        stream.cancel()
