"""Shared fixtures: the cluster under test and gRPC stubs generated from proto/ at test time.

The cluster is started by services/ingress/test/clients.test.ts, which runs this suite with
SHOAL_URL pointing at it; run by hand, point SHOAL_URL at any cluster (e.g. `npm start`).
"""

import importlib
import json
import os
import sys
from pathlib import Path

import pytest
from grpc_tools import protoc

from helpers import REPO, FixtureSentence, Stubs


def pytest_configure(config: pytest.Config) -> None:
    if not os.environ.get("SHOAL_URL"):
        raise pytest.UsageError(
            "SHOAL_URL is not set: point it at a running cluster, e.g. "
            "SHOAL_URL=http://127.0.0.1:8080 (services/ingress/test/clients.test.ts starts one "
            "and sets it)"
        )


@pytest.fixture(scope="session")
def shoal_url() -> str:
    return os.environ["SHOAL_URL"].rstrip("/")


@pytest.fixture(scope="session")
def stubs(tmp_path_factory: pytest.TempPathFactory) -> Stubs:
    """Python code generated from inference.proto by grpcio-tools, as a Python user would."""
    out = tmp_path_factory.mktemp("stubs")
    well_known = Path(protoc.__file__).parent / "_proto"
    rc = protoc.main(
        [
            "grpc_tools.protoc",
            f"-I{REPO / 'proto'}",
            f"-I{well_known}",
            f"--python_out={out}",
            f"--grpc_python_out={out}",
            str(REPO / "proto" / "shoal" / "inference" / "v1" / "inference.proto"),
        ]
    )
    assert rc == 0, f"grpc_tools.protoc exited {rc}"
    sys.path.insert(0, str(out))
    return Stubs(
        pb2=importlib.import_module("shoal.inference.v1.inference_pb2"),
        pb2_grpc=importlib.import_module("shoal.inference.v1.inference_pb2_grpc"),
    )


@pytest.fixture(scope="session")
def reference() -> list[FixtureSentence]:
    """Embeddings computed by sentence-transformers (tools/reference)."""
    path = REPO / "tools" / "reference" / "fixtures" / "all-minilm-l6-v2.json"
    sentences = json.loads(path.read_text())["sentences"]
    return [FixtureSentence(s["text"], s["embedding"], s["tokens"]) for s in sentences]

