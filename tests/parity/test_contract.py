"""Seams of the kernel contract: build_info, plans crossing backends, HNSW library failures."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import memwire
import pytest
from memwire._kernel import contract
from memwire._kernel.backend import load_kernel
from memwire._kernel.contract import Kernel
from memwire.errors import HnswError, MemwireError, SnapshotError

from .test_dense_graph import large, vectors


def test_build_info_names_the_backend_version_and_contract(kernel: Kernel) -> None:
    info = kernel.build_info()
    assert info["backend"] in ("rust", "python")
    assert kernel is load_kernel(str(info["backend"]))
    assert info["version"] == memwire.__version__
    assert info["contract"] == kernel.CONTRACT_VERSION == contract.CONTRACT_VERSION
    assert all(isinstance(v, (str, int, list)) for v in info.values())


def test_a_plan_of_the_other_backend_is_not_installed(both_kernels: tuple[Kernel, Kernel]) -> None:
    rust, python = (large(k) for k in both_kernels)
    plans = [index.plan_dense_graph() for index in (rust, python)]
    assert all(plan is not None and plan.build() for plan in plans)
    assert rust.install_dense_graph(plans[1]) is False  # type: ignore[arg-type]
    assert python.install_dense_graph(plans[0]) is False  # type: ignore[arg-type]
    assert rust.install_dense_graph(object()) is False  # type: ignore[arg-type]
    assert python.install_dense_graph(object()) is False  # type: ignore[arg-type]
    assert rust.dense_graph_needed() and python.dense_graph_needed()
    assert rust.install_dense_graph(plans[0]) and python.install_dense_graph(plans[1])


def test_hnsw_error_is_its_own_kind() -> None:
    assert issubclass(HnswError, MemwireError) and issubclass(HnswError, RuntimeError)
    assert not issubclass(HnswError, SnapshotError)


# The Rust kernel maps the same failures to the same messages (rust/memwire-core/src/error.rs,
# `Error::Hnsw`, tested by cargo test); only the Python binding can be made to fail on demand.
def _failing(monkeypatch: pytest.MonkeyPatch, method: str) -> None:
    from usearch.index import Index

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("injected usearch failure")

    monkeypatch.setattr(Index, method, fail)


def _built(kernel: Kernel) -> contract.BankIndex:
    index = large(kernel)
    assert index.build_dense_graph()
    return index


QUERY = vectors(1, seed=4)[0]
# (the usearch method made to fail, the operation named in the message)
CASES = [("search", "search"), ("save", "save"), ("add", "build"), ("__init__", "create")]


@pytest.mark.parametrize("method,op", CASES, ids=[op for _, op in CASES])
def test_a_failing_hnsw_library_raises_hnsw_error(
    monkeypatch: pytest.MonkeyPatch, method: str, op: str
) -> None:
    pure = load_kernel("python")
    index = _built(pure) if op in ("search", "save") else large(pure)
    run: Callable[[], object] = {
        "search": lambda: index.search_dense(QUERY, 5),
        "save": index.to_bytes,
    }.get(op, index.build_dense_graph)
    _failing(monkeypatch, method)
    with pytest.raises(HnswError) as info:
        run()
    assert str(info.value) == f"hnsw graph {op} failed"
    assert isinstance(info.value.__cause__, RuntimeError), "the library's error stays chained"
    monkeypatch.undo()
    if op in ("search", "save"):
        assert len(index.search_dense(QUERY, 5)) == 5 and index.to_bytes(), "nothing changed"
    else:
        assert index.dense_graph_needed(), "no graph was installed: searches stay exact"
        assert index.build_dense_graph()


def test_a_failed_insertion_into_an_installed_graph_only_loses_a_proposal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As in the Rust kernel (`graph_add` ignores the library's result): the add itself stands.
    index = _built(load_kernel("python"))
    _failing(monkeypatch, "add")
    index.add(10_000, "late arrival", vectors(1, seed=7)[0])
    assert 10_000 in index
    assert [o for o, _ in index.search_bm25("arrival", 1)] == [10_000]
