"""A dependency-free progress line on stderr for long work (imports, evaluations, reembed).

Shown only when stderr is a terminal, so logs and pipes never fill with carriage returns.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import IO, TypeVar

__all__ = ["Progress", "track"]

T = TypeVar("T")


class Progress:
    """A dependency-free progress line on stderr, shown only when stderr is a terminal."""

    def __init__(
        self, total: int, label: str, *, stream: IO[str] | None = None, enabled: bool | None = None
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.total = max(total, 0)
        self.label = label
        self.done = 0
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self._last = 0.0
        self._shown = False

    def advance(self, amount: int) -> None:
        self.done += amount
        now = time.monotonic()
        if self.enabled and now - self._last >= 0.1:
            self._last = now
            self._draw()

    def _draw(self, suffix: str = "") -> None:
        if self.total:
            frac = min(self.done / self.total, 1.0)
            filled = int(frac * 30)
            bar = "#" * filled + "-" * (30 - filled)
            line = f"\r{self.label} [{bar}] {frac * 100:5.1f}%{suffix}"
        else:
            line = f"\r{self.label} {self.done:,} bytes{suffix}"
        self.stream.write(line)
        self.stream.flush()
        self._shown = True

    def note(self, text: str) -> None:
        if self.enabled:
            self.stream.write(f"\r{text}\x1b[K")
            self.stream.flush()
            self._shown = True

    def finish(self) -> None:
        if self.enabled and self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def track(items: Iterable[T], total: int, label: str, enabled: bool | None = None) -> Iterator[T]:
    """Yield ``items`` while a :class:`Progress` line counts them."""
    bar = Progress(total, label, enabled=enabled)
    try:
        for item in items:
            yield item
            bar.advance(1)
    finally:
        bar.finish()
