"""Embedding a bulk retain's memories on a worker thread while the caller's thread prepares the
next ones and writes the earlier batches.

The Rust kernel's static embedder releases the GIL for its token sums, so on a machine with a
second core the sums of one chunk run while Python validates and redacts the next chunk and
SQLite inserts an earlier batch. Each chunk's vectors are exactly what one ``encode`` call of
the whole batch gives (every vector is computed and quantised on its own), so the rows are the
same as the serial path's.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType

from memwire._text import embed_text
from memwire.embed import Embedder, encode
from memwire.store import NewMemory, Space

__all__ = ["CHUNK", "EmbedAhead"]

# Small enough that the first sums start early, large enough that each call is one kernel pass.
CHUNK = 2_000


class EmbedAhead:
    """Vectors of consecutive chunks of items, computed in submission order on one thread."""

    def __init__(self, embedder: Embedder, space: Space) -> None:
        self._embedder = embedder
        self._space = space
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memwire-embed")
        self._chunks: list[Future[list[bytes | None]]] = []
        self._done: list[bytes | None] = []  # vectors of the chunks already collected

    def submit(self, items: Sequence[NewMemory]) -> None:
        """Start embedding ``items`` (the next ones after everything submitted so far)."""
        if items:
            texts = [embed_text(item.content) for item in items]
            self._chunks.append(self._pool.submit(encode, self._embedder, self._space, texts))

    def take(self, count: int) -> list[bytes | None]:
        """The vectors of the next ``count`` submitted items (waits for their chunks); an error
        of the embedder is raised here, where the serial path would have raised it."""
        while len(self._done) < count:
            self._done.extend(self._chunks.pop(0).result())
        out, self._done = self._done[:count], self._done[count:]
        return out

    def close(self) -> None:
        """Drop what was not taken and stop the thread (waits for a chunk in progress)."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> EmbedAhead:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
