"""Server reflection through grpcio-reflection: discover the API, then call it with no .proto at
hand, building messages from the discovered descriptors as grpcurl does."""

from collections.abc import Iterator
from urllib.parse import urlsplit

import grpc
import pytest
from google.protobuf import message_factory
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.descriptor_pool import DescriptorPool
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from helpers import DIMENSIONS, MINILM, norm

INFERENCE = "shoal.inference.v1.InferenceService"


@pytest.fixture
def channel(shoal_url: str) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(urlsplit(shoal_url).netloc) as channel:
        yield channel


@pytest.fixture
def database(channel: grpc.Channel) -> ProtoReflectionDescriptorDatabase:
    return ProtoReflectionDescriptorDatabase(channel)


@pytest.fixture
def pool(database: ProtoReflectionDescriptorDatabase) -> DescriptorPool:
    # Its own pool, filled only from the server, so nothing generated locally can stand in.
    return DescriptorPool(database)


def test_lists_the_services(database: ProtoReflectionDescriptorDatabase) -> None:
    assert sorted(database.get_services()) == [
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
        INFERENCE,
    ]


def test_describes_the_inference_service(pool: DescriptorPool) -> None:
    service = pool.FindServiceByName(INFERENCE)
    assert service.file.name == "shoal/inference/v1/inference.proto"
    methods = {m.name: m for m in service.methods}
    assert sorted(methods) == ["Embed", "Extract", "Generate", "ListModels", "Score"]
    assert methods["Embed"].input_type.full_name == "shoal.inference.v1.EmbedRequest"
    assert methods["Generate"].server_streaming
    fields = {f.name: f for f in methods["Embed"].input_type.fields}
    assert fields["model"].number == 1
    assert fields["model"].type == FieldDescriptor.TYPE_STRING
    assert fields["inputs"].number == 2
    assert fields["inputs"].is_repeated
    assert fields["priority"].enum_type.full_name == "shoal.inference.v1.Priority"


def test_calls_embed_with_messages_built_from_discovered_descriptors(
    channel: grpc.Channel, pool: DescriptorPool
) -> None:
    embed = pool.FindServiceByName(INFERENCE).methods_by_name["Embed"]
    request_class = message_factory.GetMessageClass(embed.input_type)
    response_class = message_factory.GetMessageClass(embed.output_type)
    call = channel.unary_unary(
        f"/{INFERENCE}/Embed",
        request_serializer=request_class.SerializeToString,
        response_deserializer=response_class.FromString,
    )
    response = call(request_class(model=MINILM, inputs=["hello world", "reflection"]), timeout=30)
    assert response.model == MINILM
    assert len(response.embeddings) == 2
    for embedding in response.embeddings:
        assert len(embedding.values) == DIMENSIONS
        assert norm(list(embedding.values)) == pytest.approx(1, abs=1e-5)


def test_finds_files_by_name(database: ProtoReflectionDescriptorDatabase) -> None:
    health = database.FindFileByName("grpc/health/v1/health.proto")
    assert health.package == "grpc.health.v1"
    assert [s.name for s in health.service] == ["Health"]


def test_unknown_symbols_and_files_are_not_found(
    database: ProtoReflectionDescriptorDatabase,
) -> None:
    # The database turns the server's NOT_FOUND error_response into KeyError.
    with pytest.raises(KeyError):
        database.FindFileContainingSymbol("shoal.nope.v1.Nope")
    with pytest.raises(KeyError):
        database.FindFileByName("shoal/nope/v1/nope.proto")
