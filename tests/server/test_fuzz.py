"""Schema-driven fuzzing of the real server from its own /openapi.json (schemathesis).

Bounded so it fits CI: a few dozen examples per operation, derandomized. The checks: no 5xx,
and every answer conforms to the documented status codes, content types and response schemas.
(schemathesis's pytest plugin does not run under pytest 9 yet, so this drives its Python API
with hypothesis directly.)
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from memwire.memory import Memory  # noqa: E402
from memwire.server.openapi import document  # noqa: E402
from memwire.server.testing import serve_in_thread  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.generation import GenerationMode  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

OPERATIONS = [
    (method.upper(), path) for path, item in document()["paths"].items() for method in item
]
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    path: Path = tmp_path_factory.mktemp("fuzz") / "memory.db"
    with Memory(path) as memory:
        memory.retain("seed memory about fuzzing", bank="default", tags=["seed"])
        with serve_in_thread(memory) as url:
            yield schemathesis.openapi.from_url(f"{url}/openapi.json")


@pytest.mark.parametrize(
    "mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["valid", "invalid"]
)
@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_no_server_error_and_schema_conformance(
    api_schema: Any, method: str, path: str, mode: Any
) -> None:
    if mode == GenerationMode.NEGATIVE and path in ("/health", "/banks"):
        pytest.skip("no parameters or body to make invalid")
    operation = api_schema[path][method]
    checks = CHECKS if mode == GenerationMode.POSITIVE else CHECKS[:3]

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=30,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(case: Any) -> None:
        case.call_and_validate(checks=checks)

    run()
