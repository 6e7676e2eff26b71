"""Constants and arithmetic the client tests share."""

import struct
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[2]
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSIONS = 384


class Stubs(NamedTuple):
    """The modules grpcio-tools generates from inference.proto."""

    pb2: ModuleType
    pb2_grpc: ModuleType


class FixtureSentence(NamedTuple):
    text: str
    embedding: list[float]
    tokens: int


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (sum(x * x for x in a) ** 0.5 * sum(y * y for y in b) ** 0.5)


def as_float32(values: list[float]) -> list[float]:
    """Each value rounded to float32: how JSON's nine-digit floats compare with float32 bytes."""
    return list(struct.unpack(f"<{len(values)}f", struct.pack(f"<{len(values)}f", *values)))


def norm(a: list[float]) -> float:
    return sum(x * x for x in a) ** 0.5
