"""The Memory API: banks of memories on a durable store, recalled through the kernel.

The store (SQLite by default) is the source of truth. Each bank's kernel index is derived from
it: loaded lazily from the bank's latest snapshot plus a replay of the changes committed after
it, kept current after every write, caught up with other processes' writes before each recall,
and snapshotted again in the background and at :meth:`Memory.close`. See docs/storage.md.

Vectors (the dense stream, docs/dense.md) are computed here, at retain, by the bank's embedder,
stored with the row in the same transaction, and read back from rows and snapshots when an
index is loaded: nothing is re-embedded on open.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import logging
import os
import threading
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

from pyroaring import BitMap

from memwire import _dates, config
from memwire._kernel.backend import backend_info, get_kernel, load_kernel
from memwire._kernel.contract import DEFAULT_DEPTH
from memwire._text import (
    MAX_QUERY_CHARS,
    clean_bank,
    clean_tags,
    clean_text,
    embed_text,
    index_text,
)
from memwire.embed import Embedder, check_embedder, encode, tiers
from memwire.embed.minilm import EmbedExtraMissing
from memwire.errors import (
    ConflictError,
    HnswError,
    InvalidInputError,
    MemwireError,
    NotFoundError,
    SnapshotError,
    StorageError,
)
from memwire.locations import default_path, default_store
from memwire.memory.as_of import as_of_moment, versions_view
from memwire.memory.background import Snapshotter
from memwire.memory.bank_state import BankState, Member, fit_vectors, is_lookup
from memwire.memory.conversation import DEFAULT_AFTER, DEFAULT_BEFORE, conversation_items
from memwire.memory.health import Health
from memwire.memory.items import (
    Draft,
    build,
    check_id,
    check_int,
    check_min_score,
    config_merger,
    new_ids,
    prepare,
    prepare_many,
    record_of,
    with_vector,
)
from memwire.memory.pack import PACK_DEPTH, packed
from memwire.memory.relevance import judge
from memwire.memory.row_cache import RowCache
from memwire.memory.snapshot_check import load_sealed, seal
from memwire.records import Hit, Record
from memwire.store import (
    LIVE,
    TRASHED,
    Additions,
    ArchivedMemory,
    BankHead,
    NewMemory,
    Row,
    Space,
    StagedVector,
    Store,
    WriteResult,
    open_store,
    space_mismatch,
)
from memwire.store.checkpoints import checkpoints_held
from memwire.store.loss import store_loss
from memwire.store.watchable import Watchable

if TYPE_CHECKING:
    from memwire._kernel.contract import Allow, BankIndex, Kernel

__all__ = ["MAX_LIMIT", "Memory", "default_path"]

log = logging.getLogger("memwire")

MAX_LIMIT = 100
MAX_LIST_LIMIT = 1000
MAX_REEMBED_BATCH = 100_000
BATCH_SIZE = 10_000
SNAPSHOT_MIN_CHANGES = 1000
_CATCH_UP_TRIES = 3
# What an index snapshot depends on besides the kernel (which checks its own versions): how
# this shell builds index text and the Unicode version of the NFKC it applies (shell=3: the
# kernel's bytes are sealed in memory/snapshot_check.py's envelope).
SHELL_FORMAT = f"shell=3;nfkc={unicodedata.unidata_version}"


def _is_current(state: BankState, head: BankHead) -> bool:
    """Whether ``state``'s index reflects the bank ``head`` describes (or a later version)."""
    index = state.index
    return (
        index is not None
        and state.bank_id == head.bank_id
        and index.dim == head.dim
        and state.covers(head.last_seq)
    )


def _retagged(first_seq: int, last_seq: int, added: Additions, removed: Sequence[int]) -> bool:
    """Whether changes from ``first_seq`` to ``last_seq`` may hold a change of tags in place
    (:meth:`Memory.update`): each addition and removal takes one seq, so a seq neither took
    is another change (a retag, say; or an addition removed again: a harmless false alarm)."""
    return last_seq - first_seq > len(added) + len(removed)


def _near(packing: tuple[float | None, bool | None], cfg: Mapping[str, Any]) -> float:
    """The pack's near-duplicate threshold: the call's, else the bank's."""
    return packing[0] if packing[0] is not None else config.near_duplicate(cfg)


class Memory:
    """Durable memory for agents: banks of memories, recalled by relevance.

    ``path``: ``None`` for the configured store (``$MEMWIRE_STORE``, else ``store`` in the
    config file ``memwire.toml``, else the default file :func:`default_path`; see
    :mod:`memwire.locations`), ``":memory:"`` for an ephemeral one, a ``postgresql://`` URL,
    else a file path. ``store``: any :class:`memwire.store.Store` instead of a
    path (the two exclude each other); the Memory owns it and closes it in :meth:`close`.
    ``backend``: ``None`` for the process-wide kernel (``MEMWIRE_BACKEND``), or ``"rust"`` /
    ``"python"``. ``embedder``: the store-wide default embedder, which a new bank takes
    (unless its config key ``embedder`` names another): a tier name (``"static"``, the bundled
    one; ``"minilm"``, the ``[embed]`` extra, :class:`~memwire.embed.minilm.EmbedExtraMissing`
    when it is not installed; ``"none"``, no vectors), any :class:`memwire.embed.Embedder`, or
    ``None`` for ``$MEMWIRE_EMBEDDER``, else ``"static"``. A bank records the embedder of its
    first vector and keeps it, whatever the default, until :meth:`reembed`; a bank recorded
    with an embedder this Memory cannot load (a user's own) is refused (docs/dense.md). Safe to
    share between threads, and to open on one file from many processes at once.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        store: Store | None = None,
        backend: str | None = None,
        embedder: Embedder | str | None = None,
    ):
        if backend is None:
            self._kernel: Kernel = get_kernel()
            self._backend = backend_info().name
        elif isinstance(backend, str):
            self._kernel = load_kernel(backend)
            self._backend = backend
        else:
            raise InvalidInputError("backend must be None, 'rust' or 'python'")
        # The default: a user's embedder object, or a tier name (loaded on first use).
        self._own: tuple[Embedder, Space] | None = None
        self._tier = config.DEFAULT_EMBEDDER
        if embedder is None or isinstance(embedder, str):
            self._tier = config.default_tier(embedder)
            tiers.check_installed(self._tier)  # fail now, naming the install command
        else:
            self._own = (embedder, Space(*check_embedder(embedder)))
        self._tiers: dict[str, tuple[Embedder, Space]] = {}
        self._embedder_lock = threading.Lock()
        if store is not None:
            if path is not None:
                raise InvalidInputError("give a path or a store, not both")
            if not isinstance(store, Store):
                raise InvalidInputError(
                    f"store must implement memwire.store.Store, got {type(store).__name__}"
                )
            self._store: Store = store
        else:
            self._store = open_store(default_store() if path is None else path)
        self._ephemeral = not self._store.durable
        # Commits and their applies hold the store's log checkpoints back (store/checkpoints.py).
        self._checkpoints_held = checkpoints_held(self._store)
        self._lock = threading.Lock()
        self._banks: dict[str, BankState] = {}
        self._rows = RowCache()  # recall's read-back, every bank's (memory/row_cache.py)
        self._closed = False
        self._watching = False
        self._snapshotter = Snapshotter(
            self._build_graph, self._snapshot, self._sweep_bank, self._bank_names_to_sweep
        )
        # TTL expiry and expired trash are honoured in a long-lived process even in banks no
        # recall touches (the thread waits on a condition meanwhile; close() stops it).
        self._snapshotter.schedule_sweeps()

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Write snapshots of the banks changed since their last one, then close the store.
        Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            names = list(self._banks)
        try:
            self._snapshotter.stop()
            for name in names:
                try:
                    self._snapshot(name)
                except Exception as exc:  # derived data: the store closes all the same
                    log.warning("snapshot of bank %r not written at close: %s", name, exc)
        finally:
            self._store.close()

    def health(self) -> Health:
        """The state of this Memory's background work: whether its thread is alive, the bank
        it works on and for how long (``stuck`` past 15 min), and the snapshot, HNSW graph and
        TTL sweep jobs whose last attempt failed (retried with backoff), and committed writes
        the store found missing when it was opened (``loss``). ``ok`` when nothing failed;
        ``memwire doctor`` prints it. See docs/storage.md, "Background work" and "Loss at
        open"."""
        return dataclasses.replace(self._snapshotter.health(), loss=store_loss(self._store))

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError("this Memory is closed")

    @property
    def backend(self) -> str:
        """``"rust"`` or ``"python"``: the kernel this Memory uses."""
        return self._backend

    # -- embedders ---------------------------------------------------------------------------

    def _tier_embedder(self, tier: str) -> tuple[Embedder, Space]:
        """The embedder of ``tier`` and its space (each tier loaded once, on first use)."""
        with self._embedder_lock:
            found = self._tiers.get(tier)
            if found is None:
                loaded = tiers.load(tier, self._backend)
                found = self._tiers[tier] = (loaded, Space(*check_embedder(loaded)))
            return found

    def _resolve_embedder(self, embedder: object = None) -> tuple[Embedder, Space] | None:
        """``embedder`` (an object, validated, or a tier name), else this Memory's default;
        None for ``"none"``."""
        if isinstance(embedder, str):
            tier = config.check_embedder_mode(embedder)
            tiers.check_installed(tier)
            return None if tier == "none" else self._tier_embedder(tier)
        if embedder is not None:
            return embedder, Space(*check_embedder(embedder))  # type: ignore[return-value]
        if self._own is not None:
            return self._own
        return None if self._tier == "none" else self._tier_embedder(self._tier)

    @property
    def embedder_id(self) -> str | None:
        """The id of the embedder a new bank takes (None: no vectors, ``"none"``)."""
        found = self._resolve_embedder()
        return found[1][0] if found is not None else None

    def _bank_embedder(self, name: str, head: BankHead | None) -> tuple[Embedder, Space] | None:
        """The embedder for bank ``name``'s vectors, or None when they are off. A bank with
        vectors keeps the embedder it recorded (InvalidInputError when this Memory cannot
        load it); one without takes its config key's tier, else this Memory's default."""
        mode = config.embedder_mode(head.config if head is not None else {})
        if mode == "none":
            return None
        recorded = head.space if head is not None else None
        try:
            if recorded is None:
                return self._resolve_embedder(mode)
            if self._own is not None and self._own[1] == recorded:
                return self._own
            tier = tiers.tier_of(recorded.embedder)
            if tier is not None:
                found = self._tier_embedder(tier)
                if found[1] == recorded:
                    return found
            offered = self._resolve_embedder(mode)
        except EmbedExtraMissing as exc:  # every door shows why, and the install command
            raise InvalidInputError(f"bank {name!r}: {exc}") from None
        raise InvalidInputError(
            space_mismatch(name, recorded, offered[1] if offered is not None else ("none", 0))
        )

    def _with_vectors(
        self, name: str, items: Sequence[NewMemory]
    ) -> tuple[list[NewMemory], Space | None]:
        """``items`` with their vectors (one ``embed`` call), and the space they are in."""
        vectors, space = self._vectors(name, [i.content for i in items])
        if vectors is None:
            return list(items), None
        return [
            item if vector is None else with_vector(item, vector)
            for item, vector in zip(items, vectors, strict=True)
        ], space

    def _vectors(
        self, name: str, contents: Sequence[str]
    ) -> tuple[Sequence[bytes | None] | None, Space | None]:
        """The vectors of ``contents`` in bank ``name``'s space (one ``embed`` call) and that
        space; ``(None, None)`` when the bank embeds nothing (or there is nothing to embed)."""
        found = self._bank_embedder(name, self._store.head(name))
        if found is None or not contents:
            return None, None
        embedder, space = found
        return encode(embedder, space, [embed_text(c) for c in contents]), space

    # -- the derived index -------------------------------------------------------------------

    def _bank(self, name: str) -> BankState:
        with self._lock:
            state = self._banks.get(name)
            if state is None:
                state = self._banks[name] = BankState(name, self._rows)
            return state

    def _watch(self) -> None:
        """Once an index is loaded, have a store shared with other processes tell this one of
        their writes (:meth:`_on_change`), so that recalls find the index already current."""
        with self._lock:
            if self._watching or self._closed or not isinstance(self._store, Watchable):
                return
            self._watching = True
        self._store.watch(self._on_change)

    def _on_change(self, bank_id: int | None, seq: int) -> None:
        """Bring the loaded index of ``bank_id`` (None: of every bank) up to ``seq`` (from the
        store's thread; a bank not loaded here is left alone until a recall needs it)."""
        with self._lock:
            if self._closed:
                return
            states = [
                s
                for s in self._banks.values()
                if s.index is not None and (bank_id is None or s.bank_id == bank_id)
            ]
        for state in states:
            if bank_id is not None and seq and state.applied >= seq:
                continue  # this process's own write, or one already replayed
            try:
                with state.lock.write():
                    if state.index is not None and not self._closed:
                        self._current(state)
            except MemwireError as exc:  # the next recall catches up itself
                log.debug("bank %r not brought up to date: %s", state.name, exc)

    def _load(self, state: BankState, bank_id: int, dim: int, use_snapshot: bool = True) -> None:
        """Build ``state``'s index (``dim``: the bank's recorded vector dimension): the stored
        snapshot (if usable) plus a replay."""
        self._watch()
        state.clear()
        state.bank_id = bank_id
        index: BankIndex | None = None
        snap = self._store.load_snapshot(bank_id, SHELL_FORMAT) if use_snapshot else None
        if snap is not None:
            seq = snap.seq
            try:
                index = load_sealed(state.name, snap, self._kernel.BankIndex.from_bytes)
            except (SnapshotError, HnswError) as exc:  # HnswError: its graph would not load
                log.info("index snapshot of bank %r not usable (%s); rebuilding", state.name, exc)
            del snap  # as big as the index: not kept through the replay
            if index is not None and index.dim != dim:
                log.info("index snapshot of bank %r has dim %d, not %d", state.name, index.dim, dim)
                index = None
            if index is not None:
                state.applied = state.snap_seq = seq
            else:
                state.snap_unusable = True  # replaced by the next snapshot (see _snapshot)
        state.index = index if index is not None else self._kernel.BankIndex(dim)
        self._replay(state, reload_on_gap=use_snapshot)
        if not self._closed and self._store.trash_rows(state.name, 1, 0):
            # Expired trash is swept at a bank's first load in a process and with its snapshots.
            self._snapshotter.request(state.name, only_sweep=True)

    def _reload(self, state: BankState, use_snapshot: bool) -> None:
        """Load ``state`` again from the store's current head."""
        head = self._store.head(state.name)
        if head is None or head.bank_id != state.bank_id:
            state.clear()
            return
        self._load(state, head.bank_id, head.dim, use_snapshot)

    def _add(self, index: BankIndex, added: Additions) -> None:
        index.add_many(
            added.ordinals,
            [index_text(c, x) for c, x in zip(added.contents, added.contexts, strict=True)],
            fit_vectors(added.vectors, index.dim),
        )

    def _replay(self, state: BankState, reload_on_gap: bool = True) -> None:
        """Apply the changes committed after ``state.applied``."""
        assert state.index is not None
        changes = self._store.changes_since(state.bank_id, state.applied)
        if changes is None:
            state.clear()
            return
        if changes.gap:
            self._reload(state, use_snapshot=reload_on_gap)
            return
        try:
            for ordinal in changes.removed:
                state.index.remove(ordinal)
            if changes.added:
                self._add(state.index, changes.added)
        except InvalidInputError as exc:  # the index disagrees with the store: rebuild it
            log.warning("index of bank %r inconsistent (%s); rebuilding", state.name, exc)
            if state.applied:
                self._reload(state, use_snapshot=False)
            else:
                raise StorageError("the index could not be rebuilt") from None
            return
        state.changed(changes.added.ordinals, changes.removed)
        if _retagged(state.applied, changes.last_seq, changes.added, changes.removed):
            state.retagged()
        state.applied = changes.last_seq

    def _current(self, state: BankState) -> BankHead | None:
        """Bring ``state`` up to date with the store (holding ``state.lock``); the bank's
        head (config, embedder), or None when the bank does not exist."""
        head = self._store.head(state.name)
        if head is None:
            state.clear()
            return None
        if state.index is None or state.bank_id != head.bank_id or state.index.dim != head.dim:
            self._load(state, head.bank_id, head.dim)
        elif state.applied < head.last_seq:
            self._replay(state)
        return head

    @contextlib.contextmanager
    def _reading(self, state: BankState) -> Iterator[BankHead | None]:
        """Hold ``state``'s read lock over an index as current as the store's head read on
        entry (None: no such bank). Recalls share the lock; catching up with the store (a
        replay, a load) takes the write lock briefly and then reads again."""
        head = self._store.head(state.name)
        for _ in range(_CATCH_UP_TRIES):
            with state.lock.read():
                if head is None or _is_current(state, head):
                    yield head
                    return
            with state.lock.write():
                head = self._current(state)
        with state.lock.write():  # the bank keeps changing under us: read as the writer
            yield self._current(state)

    def _apply(self, result: WriteResult) -> None:
        """Apply a committed write to the loaded index, if any (the write is already durable)."""
        if result.first_seq == result.last_seq:
            return
        with self._lock:
            state = self._banks.get(result.bank)
        if state is None:
            return
        with state.inflight(result.first_seq, result.last_seq), state.lock.write():
            if state.index is None:
                return
            if state.bank_id != result.bank_id or (
                result.dim is not None and result.dim != state.index.dim
            ):
                state.clear()  # reloaded at the next recall
                return
            if state.applied >= result.last_seq:
                return
            if state.applied != result.first_seq:
                self._replay(state)
            else:
                try:
                    for ordinal in result.removed:
                        state.index.remove(ordinal)
                    if result.added:
                        self._add(state.index, result.added)
                    state.changed(result.added.ordinals, result.removed)
                    if _retagged(result.first_seq, result.last_seq, result.added, result.removed):
                        state.retagged()
                    state.applied = result.last_seq
                except InvalidInputError as exc:
                    log.warning("index of bank %r inconsistent (%s); reloading", state.name, exc)
                    state.clear()
                    return
        self._maybe_snapshot(state)

    def _maybe_snapshot(self, state: BankState) -> None:
        """Hand the bank to the background thread when it is due a snapshot or an HNSW graph
        (called after writes and recalls, outside the bank's lock)."""
        if self._closed:
            return
        index = state.index
        if index is None:
            return
        due = not self._ephemeral and (
            state.snap_unusable
            or state.applied - state.snap_seq >= max(SNAPSHOT_MIN_CHANGES, len(index) // 10)
        )
        if due or index.dense_graph_needed():
            # Expired trash (and TTL memories) are swept whenever the bank is snapshotted.
            self._snapshotter.request(state.name, sweep=True)

    def _build_graph(self, name: str) -> None:
        """Build bank ``name``'s HNSW graph if its index needs one. The plan (a copy of the
        vectors) and the install (which replays the changes made meanwhile) take the bank's
        lock briefly; the build itself, about a minute at 250k vectors, runs without it, so
        recall (the sign scan until the install) and writes go on."""
        with self._lock:
            state = self._banks.get(name)
        if state is None:
            return
        with state.lock.write():
            index = state.index
            plan = index.plan_dense_graph() if index is not None else None
        if plan is None or not self._snapshotter.building(plan):
            return
        try:
            built = plan.build()
        except MemwireError as exc:
            log.warning("HNSW graph of bank %r not built: %s", name, exc)
            built = False
        finally:
            self._snapshotter.building(None)
        if not built:
            return
        with state.lock.write():
            if state.index is index and index is not None and index.install_dense_graph(plan):
                state.graph_unsaved = True

    def _snapshot(self, name: str) -> None:
        """Store a snapshot of bank ``name``'s index if it has changes since the last one."""
        if self._ephemeral:
            return
        with self._lock:
            state = self._banks.get(name)
        if state is None:
            return
        with state.lock.read(long=True):
            if state.index is None or (
                state.applied <= state.snap_seq
                and not state.graph_unsaved
                and not state.snap_unusable
            ):
                return
            # HnswError (the graph could not be saved) goes to the caller: the background
            # thread retries the bank later.
            data = state.index.to_bytes()
            seq, bank_id = state.applied, state.bank_id
            graph, unusable = state.graph_unsaved, state.snap_unusable
        data = seal(seq, data)  # the kernel's bytes, now unreferenced, are freed here
        # A new graph replaces the snapshot of the same changes that lacks it; any snapshot
        # replaces one that could not be loaded (an older snapshot version, say). A failure
        # (a full disk: StorageFullError) goes to the caller, which logs it once per bank.
        self._store.save_snapshot(bank_id, seq, data, SHELL_FORMAT, replace_same=graph or unusable)
        with state.lock.write():
            if state.bank_id == bank_id and state.snap_seq <= seq:
                state.snap_seq = seq
                state.graph_unsaved = state.graph_unsaved and not graph
                state.snap_unusable = state.snap_unusable and not unusable

    # -- writes ------------------------------------------------------------------------------

    def _write(
        self, bank: str, items: Sequence[NewMemory], use_config: bool = True, imported: bool = False
    ) -> WriteResult:
        """Embed ``items`` (one batch), then write them with their vectors in one transaction."""
        with_vectors, space = self._with_vectors(bank, items)
        return self._commit(bank, with_vectors, space, use_config, imported)

    def _write_drafts(self, bank: str, drafts: Sequence[Draft]) -> WriteResult:
        """:meth:`_write` of prepared drafts: each memory is built once, with its vector."""
        vectors, space = self._vectors(bank, [d[1] for d in drafts])
        if vectors is None:
            return self._commit(bank, [build(d) for d in drafts], None)
        return self._commit(bank, list(map(build, drafts, vectors)), space)

    def _commit(
        self,
        bank: str,
        items: Sequence[NewMemory],
        space: Space | None,
        use_config: bool = True,
        imported: bool = False,
    ) -> WriteResult:
        """Write ``items`` (with their vectors) in one transaction, then apply it to the index."""
        with self._checkpoints_held():
            result = self._store.write(
                bank,
                items,
                config.retain_tags if use_config else None,
                imported=imported,
                space=space,
            )
            self._apply(result)
        return result

    def retain(
        self,
        content: str,
        *,
        bank: str = "default",
        tags: Iterable[str] = (),
        context: str | None = None,
        created_at: object = None,
        document_id: str | None = None,
        update_mode: str = "replace",
        supersedes: Iterable[str] = (),
    ) -> str:
        """Store one memory and return its id (durable when this returns).

        Byte-identical content already in the bank (among memories without a ``document_id``)
        returns the existing id. With ``document_id`` the retain is an upsert: ``"replace"``
        supersedes the document's previous memory with this one in one transaction (the old
        one stays in :meth:`history`), ``"append"`` refuses a second memory for the document.
        ``supersedes``: ids of live memories of the bank this one replaces, in the same
        transaction (:class:`NotFoundError` for an unknown id, :class:`ConflictError` for one
        no longer live; nothing is written then).
        """
        self._check_open()
        name = clean_bank(bank)
        item = prepare(
            content,
            tags=tags,
            context=context,
            created_at=created_at,
            document_id=document_id,
            update_mode=update_mode,
            supersedes=supersedes,
        )
        return self._write(name, [item]).ids[0]

    def retain_many(self, items: Iterable[object], *, bank: str = "default") -> list[str]:
        """Store many memories (strings, or dicts with :meth:`retain`'s fields); one id per
        item, in order. Every item is validated before anything is written; each batch of
        10,000 is one ``embed`` call and one transaction."""
        self._check_open()
        name = clean_bank(bank)
        if isinstance(items, (str, bytes, Mapping)):
            raise InvalidInputError("items must be a list of strings or dicts")
        listed = list(items)
        now = _dates.format_utc(_dates.now_utc())
        prepared = prepare_many(listed, now, new_ids(len(listed)), self._kernel.may_redact_many)
        ids: list[str] = []
        for start in range(0, len(prepared), BATCH_SIZE):
            ids.extend(self._write_drafts(name, prepared[start : start + BATCH_SIZE]).ids)
        return ids

    def retain_conversation(
        self,
        turns: Iterable[object],
        *,
        bank: str = "default",
        before: int = DEFAULT_BEFORE,
        after: int = DEFAULT_AFTER,
        tags: Iterable[str] | None = None,
    ) -> list[str]:
        """Store a conversation, one memory per turn, in order; one id per turn.

        ``turns``: dicts with ``speaker`` and ``text`` (non-empty strings) and optionally
        ``created_at``, ``session`` (a string or integer; a context window never crosses a
        session) and ``tags``. Each memory's content is ``"speaker: text"`` and its context
        its date (``8 May 2023``, when the turn has ``created_at``), then the texts of the
        ``before`` turns before it and the ``after`` turns after it (0 to 20; default 2 and 1,
        the design chosen on LoCoMo dev, docs/BENCHMARKS.md; no turn after a turn that asks,
        one whose text ends with ``?``). ``tags`` are
        added to every turn. Validated whole before anything is written, as
        :meth:`retain_many`."""
        self._check_open()
        items = conversation_items(turns, before=before, after=after, tags=tags)
        return self.retain_many(items, bank=bank)

    def forget(self, id: str, *, bank: str | None = None) -> bool:
        """Move a live memory to the trash (its bank's ``trash_days``, default 30, after which
        the background sweep deletes it; :meth:`restore` takes it back), or delete it when
        ``trash_days`` is 0. It leaves recall at once. True if it was live (in ``bank``, when
        given); idempotent."""
        self._check_open()
        memory_id = check_id(id)
        name = None if bank is None else clean_bank(bank)
        row = self._store.get(memory_id)
        if row is None or row.status != LIVE or (name is not None and row.bank != name):
            return False
        keep = config.trash_days(self._store.get_config(row.bank) or {}) > 0
        result = self._store.forget(memory_id, row.bank, trash=keep)
        if result is None:
            return False
        self._apply(result)
        return True

    # -- history and trash -------------------------------------------------------------------

    def _row(self, memory_id: str, name: str | None) -> Row:
        """The row of ``memory_id`` in any state (in bank ``name``), or NotFoundError."""
        row = self._store.get(memory_id)
        if row is None or (name is not None and row.bank != name):
            where = "" if name is None else f" in bank {name!r}"
            raise NotFoundError(f"no memory {memory_id!r}{where}")
        return row

    def update(
        self,
        id: str,
        *,
        bank: str | None = None,
        content: str | None = None,
        context: str | None = None,
        tags: Iterable[str] | None = None,
    ) -> str:
        """Change a live memory; returns the id of its current version.

        A new ``content`` or ``context`` (``""`` clears it) makes a new memory (new id,
        ``created_at`` now, the new ``tags`` if given else the old ones, the same document id)
        that supersedes this one in one transaction; it stays in :meth:`history`. Only new
        ``tags``: changed in place (same id). Nothing different: nothing is written.
        :class:`NotFoundError` for an unknown id, :class:`ConflictError` for a memory no longer
        live (superseded or trashed)."""
        self._check_open()
        memory_id = check_id(id)
        name = None if bank is None else clean_bank(bank)
        if content is None and context is None and tags is None:
            raise InvalidInputError("update needs content, context or tags")
        old = self._row(memory_id, name)
        if old.status != LIVE:
            by = f" (superseded by {old.superseded_by!r})" if old.superseded_by else ""
            raise ConflictError(
                f"memory {memory_id!r} is {old.status}{by}; update its live version"
            )
        new = prepare(
            old.content if content is None else content,
            tags=old.tags if tags is None else tags,
            context=old.context if context is None else context,
            document_id=old.document_id,
            supersedes=(memory_id,),
        )
        if new.content == old.content and new.context == old.context:
            wanted = new.tags
            if tags is not None:
                extra = config.retain_tags(self._store.get_config(old.bank) or {})
                wanted = wanted + tuple(t for t in extra if t not in wanted)
            if tags is None or wanted == old.tags:
                return memory_id
            result = self._store.retag(memory_id, old.bank, wanted)
            if result is None:  # superseded or forgotten meanwhile
                return self.update(memory_id, bank=bank, tags=tags)
            self._apply(result)
            return memory_id
        return self._write(old.bank, [new]).ids[0]

    def history(self, id: str, *, bank: str | None = None) -> list[Record]:
        """Every version of the memory ``id`` (the chain of supersessions it belongs to, both
        ways), oldest first, each with its ``status``; :class:`NotFoundError` if unknown."""
        self._check_open()
        memory_id = check_id(id)
        name = None if bank is None else clean_bank(bank)
        self._row(memory_id, name)
        return [record_of(r) for r in self._store.history(memory_id)]

    def trash(self, *, bank: str = "default", limit: int = 50, offset: int = 0) -> list[Record]:
        """A page of the bank's trashed memories, the most recently trashed first."""
        self._check_open()
        name = clean_bank(bank)
        count = check_int(limit, "limit", 1, MAX_LIST_LIMIT)
        skip = check_int(offset, "offset", 0, 2**62)
        return [record_of(r) for r in self._store.trash_rows(name, count, skip)]

    def restore(self, id: str, *, bank: str | None = None) -> str:
        """Take a memory out of the trash (live again, same id); returns the id.
        :class:`NotFoundError` when it is not in the trash, :class:`ConflictError` when a live
        memory has taken its place (its document id, or the same content)."""
        self._check_open()
        memory_id = check_id(id)
        name = None if bank is None else clean_bank(bank)
        vector, space = self._restored_vector(memory_id, name)
        result = self._store.restore(memory_id, name, vector=vector, space=space)
        self._apply(result)
        return memory_id

    def _restored_vector(
        self, memory_id: str, name: str | None
    ) -> tuple[bytes | None, Space | None]:
        """The vector a trashed memory comes back with if a reembed dropped its own: its
        content encoded in the bank's recorded space (the store keeps it only if that is
        still the bank's space at the restore). None when the bank has no vectors or this
        Memory cannot load its embedder (the memory is then restored without one, as
        before: found by its words only)."""
        row = self._store.get(memory_id)
        if row is None or row.status != TRASHED or (name is not None and row.bank != name):
            return None, None  # the store's restore says why
        head = self._store.head(row.bank)
        if head is None or head.space is None:
            return None, None
        try:
            found = self._bank_embedder(row.bank, head)
        except InvalidInputError:
            return None, None
        if found is None:
            return None, None
        return encode(found[0], found[1], [embed_text(row.content)])[0], found[1]

    def empty_trash(self, *, bank: str = "default", older_than_days: float | None = None) -> int:
        """Delete the bank's trashed memories for good (only those trashed more than
        ``older_than_days`` ago, when given); returns how many."""
        self._check_open()
        name = clean_bank(bank)
        before = None
        if older_than_days is not None:
            if (
                isinstance(older_than_days, bool)
                or not isinstance(older_than_days, (int, float))
                or not 0 <= older_than_days < 1e6
            ):
                raise InvalidInputError(
                    f"older_than_days must be a number from 0 to 1e6, got {older_than_days!r}"
                )
            before = _dates.cutoff(older_than_days)
        return len(self._store.empty_trash(name, before))

    def purge(self, id: str, *, bank: str | None = None) -> bool:
        """Delete one memory for good, in any state: from the live memories, the trash and its
        history (the chain is relinked past it) and from the bank's index snapshot (every index
        of the bank is rebuilt from the rows). Its text leaves the store's files at
        :meth:`vacuum`. True if it existed."""
        self._check_open()
        memory_id = check_id(id)
        name = None if bank is None else clean_bank(bank)
        row = self._store.get(memory_id)
        if row is None or (name is not None and row.bank != name):
            return False
        state = self._bank(row.bank)
        with state.lock.write():
            result = self._store.purge(memory_id, row.bank)
            state.clear()  # rebuilt from the rows at the next recall, without the purged text
        return result is not None

    def vacuum(self) -> None:
        """Compact the store so the text of deleted memories leaves its files (SQLite:
        checkpoint and VACUUM; PostgreSQL: VACUUM of memwire's tables). Takes time and, on
        SQLite, room for a copy of the file."""
        self._check_open()
        self._store.vacuum()

    def delete_bank(self, bank: str) -> bool:
        """Delete a bank with all its memories, config and snapshot; True if it existed."""
        self._check_open()
        name = clean_bank(bank)
        state = self._bank(name)
        with state.lock.write():
            existed = self._store.delete_bank(name)
            state.clear()
        return existed

    def sweep(self, dry_run: bool = False) -> list[str]:
        """Delete the memories older than their bank's ``ttl_days`` (outright: expiry does
        not go through the trash); returns their ids (with ``dry_run``, the ids that would be
        deleted, deleting nothing). Trashed memories past ``trash_days`` are deleted too
        (unless ``dry_run``), as the background sweep does; their ids are not listed."""
        self._check_open()
        removed: list[str] = []
        for name in self._store.bank_names():
            cfg = self._store.get_config(name) or {}
            if not dry_run:
                self._store.empty_trash(name, _dates.cutoff(config.trash_days(cfg)))
            days = config.ttl_days(cfg)
            if days is None:
                continue
            expired = self._store.expire(name, _dates.cutoff(days), bool(dry_run))
            removed.extend(expired.ids)
            if expired.result is not None:
                self._apply(expired.result)
        return removed

    def _bank_names_to_sweep(self) -> list[str]:
        """Every bank of the store, for the background thread's timed sweep."""
        return [] if self._closed else self._store.bank_names()

    def _sweep_bank(self, name: str) -> None:
        """The background sweep of one bank: its trash past ``trash_days``, then, in a TTL
        bank, its expired memories (a read first: most calls find nothing)."""
        if self._closed:
            return
        cfg = self._store.get_config(name) or {}
        self._store.empty_trash(name, _dates.cutoff(config.trash_days(cfg)))
        days = config.ttl_days(cfg)
        if days is None:
            return
        cutoff = _dates.cutoff(days)
        if not self._store.expire(name, cutoff, True).ids:
            return
        expired = self._store.expire(name, cutoff, False)
        if expired.result is not None:
            self._apply(expired.result)

    # -- reads -------------------------------------------------------------------------------

    def recall(
        self,
        query: str,
        *,
        bank: str = "default",
        limit: int = 10,
        budget: int | None = None,
        tags: Iterable[str] | None = None,
        exclude_tags: Iterable[str] | None = None,
        min_score: float | None = None,
        as_of: datetime | str | None = None,
        near_duplicate: float | None = None,
        prefer_newest: bool | None = None,
    ) -> list[Hit]:
        """The memories of ``bank`` most relevant to ``query``, best first.

        ``limit``: 1 to 100 hits. ``budget``: tokens of content returned (argument, else the
        bank's ``recall_max_tokens``, else 8000); the top hit is truncated rather than dropped.
        ``tags``: only memories with at least one of them; ``exclude_tags``: none of them.
        ``min_score``: drop hits whose fused score is below it, so a query with nothing relevant
        returns nothing (default: the bank's ``min_score``, else ``DEFAULT_MIN_SCORE``; 0 keeps
        every hit). The fused score is in [0, 1], with one meaning in every query and bank:
        the ``fusion_weights``-weighted mean of the memory's BM25 over its most it could score
        for the query's terms, the share of query terms it contains and its cosine with the
        query (docs/dense.md, "Score fusion").
        ``as_of`` (an aware datetime, naive meaning UTC, or an ISO 8601 string): recall among
        the memories live at that instant instead (retained by then, not yet superseded or
        trashed; a restored memory counts as live since it was retained), from an index built
        for the call: its cost grows with the bank's whole history. A future instant is now.
        ``near_duplicate``: serve one hit per family of near-duplicates, memories whose texts
        are the same or whose index terms have at least this Jaccard similarity (0 turns it
        off; default: the bank's ``near_duplicate``); ``prefer_newest``: serve each family by
        its newest memory (default: the bank's ``prefer_newest``). docs/dense.md, "The pack".
        """
        self._check_open()
        text = clean_text(query, "query", MAX_QUERY_CHARS)
        name = clean_bank(bank)
        count = check_int(limit, "limit", 1, MAX_LIMIT)
        floor = check_min_score(min_score)
        near = (
            None if near_duplicate is None else config.check_floor(near_duplicate, "near_duplicate")
        )
        newest = None if prefer_newest is None else config.check_prefer_newest(prefer_newest)
        packing = (near, newest)
        if budget is not None:
            config.recall_budget({}, budget)
        want = clean_tags(tags) if tags is not None else []
        avoid = clean_tags(exclude_tags, "exclude_tags") if exclude_tags is not None else []
        at = as_of_moment(as_of)
        if at is not None:
            return self._recall_as_of(text, name, count, budget, want, avoid, floor, at, packing)
        state = self._bank(name)
        with self._reading(state) as head:
            if head is None or state.index is None or len(state.index) == 0:
                return []
            cfg = head.config
            days = config.ttl_days(cfg)
            cutoff = _dates.cutoff(days) if days is not None else None
            allow: Allow | None = None
            member: Member | None = None  # ``allow`` as a set, when there is one
            tagged: BitMap | None = None  # the tag filter's members, when there is one
            if want or avoid:
                allow, tagged = state.filters.allowed(
                    self._store, state.bank_id, want, avoid, self._kernel
                )
                member = tagged
            if cutoff is not None:
                expired = state.expiry.expired(self._store, state.bank_id, cutoff)
                if expired:
                    # Expired memories, kept out by the kernel (memory/expiry.py) until the
                    # background sweep deletes them.
                    if state.expiry.sweep_due():
                        self._snapshotter.request(name, sweep=True)
                    if tagged is None:
                        allow, member = state.expiry.allow(self._kernel, state.applied + 1)
                    elif tagged.intersect(expired):
                        kept = tagged - expired
                        allow, member = self._kernel.AllowSet.from_bytes(kept.serialize()), kept
            if allow is not None and not len(allow):
                return []
            rows, asked, share, space = self._rank(
                name, head, state.index, text, count, allow, member, packing
            )
            bank_id, index = state.bank_id, state.index
        self._maybe_snapshot(state)
        return self._hits(
            rows,
            asked,
            (share, space),
            count,
            floor,
            head.config,
            budget,
            functools.partial(
                state.rows.read,
                bank_id,
                fetch=functools.partial(self._store.rows_by_ordinal, bank_id),
            ),
            packing,
            index,
        )

    def _rank(
        self,
        name: str,
        head: BankHead,
        index: BankIndex,
        text: str,
        count: int,
        allow: Allow | None,
        member: Member | None,
        packing: tuple[float | None, bool | None],
    ) -> tuple[list[tuple[int, float, int, int, int]], int, float, str | None]:
        """The kernel's ranking of ``index`` for ``text``: its rows, how many were asked for,
        the dense stream's share of the weights (0 without a query vector) and the id of the
        embedder of the vectors (None without a query vector)."""
        cfg = head.config
        weights = config.fusion_weights(cfg)
        vector: bytes | None = None
        space: str | None = None
        if weights[2] > 0 and head.embedder is not None and index.dim:
            try:
                chosen = self._bank_embedder(name, head)
            except InvalidInputError:
                # The bank's embedder cannot be loaded here: a lookup still answers lexically
                # (it would not have used the dense stream), any other query says why.
                lexical = weights[0] > 0 or weights[1] > 0
                ratio = config.lookup_ratio(cfg)
                if not (lexical and is_lookup(index, text, allow, ratio, member)):
                    raise
                chosen, weights = None, (weights[0], weights[1], 0.0)
            if chosen is not None:
                vector = encode(chosen[0], chosen[1], [text])[0]
                space = chosen[1].embedder
        # The pack reads PACK_DEPTH rows per hit, to refill what its families fold away.
        depth = count * PACK_DEPTH if _near(packing, cfg) > 0 else count
        if vector is None:
            rows = index.recall(text, depth, weights=weights, allow=allow)
            return rows, depth, 0.0, None
        # With a query vector, every candidate comes back: the rescue compares the dense
        # stream's first hits with its RESCUE_REFERENCE-th (memory/relevance.py). A lookup
        # (BM25's best hit leads the second by ``lookup_ratio``: the query names something one
        # memory has) runs lexically: the dense stream would only add neighbours that can
        # outrank it. The kernel decides that in its BM25 pass (docs/parity.md).
        asked = max(depth, 3 * DEFAULT_DEPTH)
        rows, lookup = index.recall_gated(
            text, asked, config.lookup_ratio(cfg), weights=weights, allow=allow, vector=vector
        )
        if lookup:
            return rows[:depth], depth, 0.0, None
        share = weights[2] / ((weights[0] + weights[1]) + weights[2])
        return rows, asked, share, space

    def _hits(
        self,
        rows: list[tuple[int, float, int, int, int]],
        asked: int,
        space: tuple[float, str | None],
        count: int,
        floor: float | None,
        cfg: Mapping[str, Any],
        budget: int | None,
        lookup: Callable[[list[int]], Mapping[int, Row]],
        packing: tuple[float | None, bool | None],
        index: BankIndex,
    ) -> list[Hit]:
        """The ranked ``rows`` past the relevance floor, one per family of near-duplicates
        (memory/pack.py), as hits within the token budget (``space``: the dense stream's share
        of the weights and the vectors' embedder id, as :meth:`_rank` gives them; ``lookup``:
        the stored rows of ordinals; ``index``: the one that ranked them)."""
        if floor is None:
            floor = config.min_score(cfg)  # the bank's relevance floor
        near = _near(packing, cfg)
        depth = count * PACK_DEPTH if near > 0 else count
        rows = judge(rows, floor, space[0], len(rows) < asked, space[1])[:depth]
        if not rows:
            return []
        found: Mapping[int, Row]
        if near > 0:
            newest = packing[1] if packing[1] is not None else config.prefer_newest(cfg)
            tokenize = self._kernel.tokenize
            rows, found = packed(rows, count, lookup, index, tokenize, near, newest)
        else:
            found = lookup([r[0] for r in rows])
        ranked = [(r, found[r[0]]) for r in rows if r[0] in found]
        kept = self._kernel.trim_to_budget(
            [row.content for _, row in ranked], config.recall_budget(cfg, budget)
        )
        hits: list[Hit] = []
        for position, content in kept:
            (_, score, bm25, overlap, dense), row = ranked[position]
            hits.append(
                Hit(
                    id=row.id,
                    content=content,
                    score=score,
                    created_at=_dates.parse_stored(row.created_at),
                    tags=row.tags,
                    context=row.context,
                    bm25_rank=bm25,
                    overlap_rank=overlap,
                    dense_rank=dense,
                )
            )
        return hits

    def _recall_as_of(
        self,
        text: str,
        name: str,
        count: int,
        budget: int | None,
        want: list[str],
        avoid: list[str],
        floor: float | None,
        at: str,
        packing: tuple[float | None, bool | None],
    ) -> list[Hit]:
        """:meth:`recall` among the memories live at ``at``, in an index built for the call
        from the store's live and archived rows (the bank's live index is not touched)."""
        head = self._store.head(name)
        if head is None:
            return []
        versions = self._store.versions_at(head.bank_id, at)
        days = config.ttl_days(head.config)
        additions, allow, by_ordinal = versions_view(
            versions, want, avoid, _dates.cutoff(days) if days is not None else None
        )
        del versions
        index = self._kernel.BankIndex(head.dim)
        if additions:
            self._add(index, additions)
        if len(index) == 0 or (allow is not None and not allow):
            return []
        member = None if allow is None else set(allow)
        rows, asked, share, space = self._rank(
            name, head, index, text, count, allow, member, packing
        )
        return self._hits(
            rows,
            asked,
            (share, space),
            count,
            floor,
            head.config,
            budget,
            lambda ordinals: {o: by_ordinal[o] for o in ordinals if o in by_ordinal},
            packing,
            index,
        )

    def reflect(self, query: str, *, bank: str = "default", min_score: float | None = None) -> str:
        """The best memories for ``query`` as one text block, each cited by id and dated
        (``min_score`` as in :meth:`recall`)."""
        hits = self.recall(query, bank=bank, min_score=min_score)
        name = clean_bank(bank)
        if not hits:
            return f"No memories in bank {name!r} match {query.strip()!r}."
        lines = [f"Memories in bank {name!r} relevant to {query.strip()!r}:"]
        for hit in hits:
            body = hit.content.replace("\n", "\n  ")
            lines.append(f"- [{hit.id}] ({hit.created_at.date().isoformat()}) {body}")
            if hit.context:
                lines.append("  context: " + hit.context.replace("\n", "\n  "))
        return "\n".join(lines)

    def get(self, id: str, *, bank: str | None = None) -> Record:
        """The memory ``id`` (in ``bank``, when given), live, superseded or trashed (see its
        ``status``), or :class:`NotFoundError` (never stored, deleted or purged)."""
        self._check_open()
        memory_id = check_id(id)
        name = None if bank is None else clean_bank(bank)
        row = self._store.get(memory_id)
        if row is None or (name is not None and row.bank != name):
            where = "" if name is None else f" in bank {name!r}"
            raise NotFoundError(f"no memory {memory_id!r}{where}")
        return record_of(row)

    def memories(self, *, bank: str = "default", limit: int = 50, offset: int = 0) -> list[Record]:
        """A page of the bank's live memories, newest ``created_at`` first."""
        self._check_open()
        name = clean_bank(bank)
        count = check_int(limit, "limit", 1, MAX_LIST_LIMIT)
        skip = check_int(offset, "offset", 0, 2**62)
        return [record_of(r) for r in self._store.list_rows(name, count, skip)]

    def stats(self, *, bank: str = "default") -> dict[str, Any]:
        """``{"bank", "count", "tags" (tag -> count), "oldest", "newest"}`` (datetimes or None)."""
        self._check_open()
        name = clean_bank(bank)
        found = self._store.stats(name)
        if found is None:
            raise NotFoundError(f"no bank {name!r}")
        return {
            "bank": name,
            "count": found.count,
            "tags": found.tags,
            "oldest": _dates.parse_stored(found.oldest) if found.oldest else None,
            "newest": _dates.parse_stored(found.newest) if found.newest else None,
        }

    def banks(self) -> list[str]:
        """The names of every bank, sorted."""
        self._check_open()
        return self._store.bank_names()

    def is_loaded(self, *, bank: str = "default") -> bool:
        """Whether ``bank``'s index is in this process's memory, so that a recall of it need
        not load it first (it may still catch up with writes made since). Never blocks and
        never touches the store: ``memwire serve`` asks it on its event loop. False once
        closed, and for a bank this process has not recalled or written yet."""
        name = clean_bank(bank)
        state = self._banks.get(name)  # a dict read: no lock needed
        return not self._closed and state is not None and state.index is not None

    def get_config(self, bank: str = "default") -> dict[str, Any]:
        """The bank's config (see :mod:`memwire.config`); :class:`NotFoundError` if no bank."""
        self._check_open()
        name = clean_bank(bank)
        found = self._store.get_config(name)
        if found is None:
            raise NotFoundError(f"no bank {name!r}")
        return found

    def set_config(self, bank: str, values: Mapping[str, Any]) -> dict[str, Any]:
        """Merge ``values`` into the bank's config (creating the bank); a ``None`` value removes
        its key. Returns the new config."""
        self._check_open()
        name = clean_bank(bank)
        config.merge_config({}, values)  # validate before touching the store
        mode = values.get("embedder") if isinstance(values, Mapping) else None
        if isinstance(mode, str):
            try:
                tiers.check_installed(mode)
            except EmbedExtraMissing as exc:
                raise InvalidInputError(str(exc)) from None
        return self._store.update_config(name, lambda current: config.merge_config(current, values))

    # -- re-encoding -------------------------------------------------------------------------

    def reembed(
        self,
        bank: str,
        *,
        embedder: Embedder | str | None = None,
        batch: int = 1000,
        progress: Callable[[int, int], object] | None = None,
    ) -> int:
        """Re-encode every memory of ``bank`` with ``embedder`` (an object or a tier name;
        default: the tier of the bank's config key ``embedder``, else this Memory's default) and
        make it the bank's embedder; returns how many memories this call encoded.

        Resumable and safe to interrupt: memories are encoded in ordinal order, ``batch`` at a
        time, each batch staged and committed with the progress, so calling ``reembed`` again
        with the same embedder continues where an interrupted run stopped (with another
        embedder, the unfinished run is discarded and a new one starts). Until the last batch
        the bank keeps its recorded embedder and its old vectors, and stays fully usable;
        memories retained meanwhile are encoded too. The switch (new vectors, new recorded
        embedder id and dimension) is one transaction, after which every process's index of the
        bank reloads from the rows. ``progress(done, total)`` is called after each batch.
        """
        self._check_open()
        name = clean_bank(bank)
        size = check_int(batch, "batch", 1, MAX_REEMBED_BATCH)
        if progress is not None and not callable(progress):
            raise InvalidInputError("progress must be callable")
        head = self._store.head(name)
        if head is None:
            raise NotFoundError(f"no bank {name!r}")
        mode = config.embedder_mode(head.config)
        if mode == "none":
            raise InvalidInputError(
                f"bank {name!r} has vectors turned off (config 'embedder' is 'none'); "
                "set it to 'static' or 'minilm' before re-encoding"
            )
        found = self._resolve_embedder(embedder if embedder is not None else mode)
        if found is None:
            raise InvalidInputError(
                f"no embedder to re-encode bank {name!r} with: name one ('static' or 'minilm')"
            )
        chosen, space = found
        started = self._store.start_reembed(name, space)
        bank_id, cursor = started.bank_id, started.done_through
        total = self._store.count_rows(bank_id)
        done = total - self._store.count_rows(bank_id, cursor)
        encoded = 0
        while True:
            page = self._store.reembed_page(bank_id, cursor, size)
            if not page:
                if self._store.finish_reembed(bank_id, space) is not None:
                    break
                continue  # memories were retained after the last page
            vectors = encode(chosen, space, [embed_text(p.content) for p in page])
            cursor = page[-1].ordinal
            staged = [StagedVector(p.ordinal, v) for p, v in zip(page, vectors, strict=True)]
            self._store.stage_vectors(bank_id, space, staged, cursor)
            encoded += len(page)
            done += len(page)
            if progress is not None:
                progress(done, max(total, done))
        state = self._bank(name)
        with state.lock.write():
            state.clear()  # other processes notice the pruned change log instead
        return encoded

    def reembed_status(self, bank: str) -> dict[str, Any] | None:
        """The bank's unfinished :meth:`reembed`, or None: ``{"embedder", "dim", "done",
        "total"}`` (memories encoded so far, memories in the bank)."""
        self._check_open()
        name = clean_bank(bank)
        head = self._store.head(name)
        if head is None:
            raise NotFoundError(f"no bank {name!r}")
        found = self._store.reembed_state(name)
        if found is None:
            return None
        total = self._store.count_rows(head.bank_id)
        return {
            "embedder": found.space.embedder,
            "dim": found.space.dim,
            "done": total - self._store.count_rows(head.bank_id, found.done_through),
            "total": total,
        }

    # -- export / import ---------------------------------------------------------------------

    def export(
        self, path_or_file: str | os.PathLike[str] | IO[str], bank: str | None = None
    ) -> int:
        """Write every memory (of ``bank``, or of all banks) as versioned JSONL, superseded and
        trashed ones too (with their status, link and date); returns the number of memories
        written. See :mod:`memwire.memory.export`."""
        from memwire.memory import export

        self._check_open()
        names = self._store.bank_names() if bank is None else [clean_bank(bank)]
        if bank is not None and names[0] not in self._store.bank_names():
            raise NotFoundError(f"no bank {names[0]!r}")
        return export.dump(self._store, names, path_or_file)

    def import_(
        self,
        path_or_file: str | os.PathLike[str] | IO[str],
        *,
        bank: str | None = None,
        skipped: list[tuple[str, Record]] | None = None,
    ) -> int:
        """Read an :meth:`export` file back (into ``bank`` when given, else each memory's own
        bank), with its history and trash (an export of version 1, which had neither, too);
        returns how many memories were written (ids already present, live or archived, are
        skipped, so importing a file twice writes it once).
        The whole file is validated before anything is written.

        ``skipped``, when given, receives why memories were not written: for each, its id in
        the file and the stored memory that stands for it: the same id, in any bank and state
        (ids are unique in a store, so a file imported into another bank of the store that
        exported it writes nothing), or a live memory with the same content in the bank."""
        from memwire.memory import export

        self._check_open()
        target = None if bank is None else clean_bank(bank)
        configs, batches = export.load(path_or_file, target)
        for name, values in configs.items():
            # An export of an older version may hold keys since refused: keep them verbatim.
            self._store.update_config(name, config_merger(values, strict=False))
        written = 0
        for name, items in batches.items():
            # Runs of live and of archived memories, in file order (the ordinals keep it).
            for live, run in itertools.groupby(items, key=lambda i: isinstance(i, NewMemory)):
                chunk_list = list(run)
                for start in range(0, len(chunk_list), BATCH_SIZE):
                    chunk = chunk_list[start : start + BATCH_SIZE]
                    if live:
                        memories = [i for i in chunk if isinstance(i, NewMemory)]
                        result = self._write(name, memories, use_config=False, imported=True)
                        written += len(result.added)
                        if skipped is not None and len(result.added) < len(memories):
                            skipped += self._skipped_live(memories, result)
                    else:
                        archived = [i for i in chunk if isinstance(i, ArchivedMemory)]
                        added = self._import_archived(name, archived)
                        written += len(added)
                        if skipped is not None and len(added) < len(archived):
                            new = set(added)
                            for i in archived:
                                row = None if i.memory.id in new else self._store.get(i.memory.id)
                                if row is not None:
                                    skipped.append((i.memory.id, record_of(row)))
        return written

    def _skipped_live(
        self, items: Sequence[NewMemory], result: WriteResult
    ) -> list[tuple[str, Record]]:
        """The items of an import's write that it did not add, each with the stored memory
        that stands for it: its id was in the store before (an added memory has an ordinal
        past the bank's seq before the write), or the bank held the same content (the write
        returned that memory's id instead)."""
        found = []
        for item, returned in zip(items, result.ids, strict=True):
            row = self._store.get(returned)
            if row is not None and (
                returned != item.id or row.bank != result.bank or row.ordinal <= result.first_seq
            ):
                found.append((item.id, record_of(row)))
        return found

    def _import_archived(self, bank: str, items: Sequence[ArchivedMemory]) -> list[str]:
        """Embed archived memories (so a restore or an as-of recall needs no encoder), then
        store them as they are; the ids added. The index holds live memories only."""
        with_vectors, space = self._with_vectors(bank, [i.memory for i in items])
        return self._store.import_archived(
            bank,
            [dataclasses.replace(i, memory=m) for i, m in zip(items, with_vectors, strict=True)],
            space,
        )
