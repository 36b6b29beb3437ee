"""The source-of-truth protocol, and the semantics every store keeps.

Everything above this package (:mod:`memwire.memory`) talks to a :class:`Store` and never to
SQL. :mod:`memwire.store.sqlite` is the embedded default; :mod:`memwire.store.reference` is a
small in-memory store written to be read, the executable form of what follows; a networked
store implements the same protocol and passes the same conformance suite (``tests/store/``).
Records crossing the boundary are the frozen, slotted dataclasses below (and the named tuple
:class:`Space`), never positional tuples.

What every store keeps:

Banks. A bank is created by its first write or config update (nothing else creates one) and
gets a ``bank_id`` that is never reused: a bank deleted and created again has a new id (and
starts at ``last_seq`` 0), which is how an index of the old bank notices.
:meth:`Store.delete_bank` removes the bank with its memories, removal log, config, snapshot and
unfinished reembed.

The change sequence and ordinals. Each bank has a counter ``last_seq`` (0 for a new bank).
Every change takes the next number: each memory added, each memory removed (forget, document
replace, TTL expiry), and the space switch of :meth:`Store.finish_reembed`. A memory's
``ordinal``, its key in the kernel index, is the number of the change that added it, so
ordinals are monotonic per bank and never reused. An addition whose ordinal would pass
:data:`MAX_ORDINAL` (the kernel's ``u32``) raises :class:`~memwire.errors.StorageError`
(:data:`EXHAUSTED`), as does a reembed switch past it; removals are not bounded, so a full
bank can still be emptied.

Removals and replay. Each removal is logged as ``(seq, ordinal)``. ``changes_since(since)``
gives what turns an index that reflects exactly the changes up to ``since`` into one of the
live memories at ``last_seq``: the ordinals removed after ``since`` (removals, applied first:
an ordinal is never added twice, so order does not matter otherwise; the list may name ordinals
the index never had, removing those does nothing) and the live memories with ordinals above
``since``. A saved snapshot at ``seq`` lets the store prune the log up to ``seq``; asking for
changes since a point the pruned log no longer covers returns ``gap=True`` and nothing else
(rebuild from ``since=0``).

Writes. :meth:`Store.write` is one atomic transaction: it commits every item or, on any error,
changes nothing at all (not even the bank's creation or its recorded space). Item by item, in
order, each seeing the items before it:

- ``imported=True`` and the item's id already present anywhere in the store: skipped, its id
  returned, nothing changed (import is idempotent).
- No ``document_id``: byte-identical content (same ``content_hash``) among the bank's memories
  without a document id returns that memory's id and changes nothing (tags and context are
  not merged).
- A ``document_id`` the bank has a memory for: the same ``content_hash`` returns its id and
  changes nothing; otherwise ``update_mode="replace"`` removes the old memory (a logged
  removal, the next seq) and adds the new one (the seq after), ``"append"`` raises
  :class:`~memwire.errors.ConflictError` (:func:`document_conflict`).
- Otherwise the memory is added with the next seq as its ordinal, its tags followed by the
  ``config_tags`` of the bank's config that it lacks. An id already in the store raises
  :class:`~memwire.errors.StorageError` (ids are generated unique; dedupe is decided first).

:class:`WriteResult` lists one id per item in order, and the net change: ``added`` the memories
added that are still live after the write, ``removed`` the ordinals live before it that it
removed (a replace of a memory added earlier in the same batch shows in neither).

Spaces (the dense stream, docs/dense.md). A memory may carry one canonical int16 vector of
its bank's embedder :class:`Space`. A bank records the space with its first write of a vector
and refuses vectors of any other with :class:`~memwire.errors.InvalidInputError`
(:func:`space_mismatch`); vectors without a space are refused the same way (:data:`NO_SPACE`),
before anything is written. Only :meth:`Store.finish_reembed` moves a bank to another space.

History. Superseding and trashing a memory move it from the live memories to the archive
(``status`` ``"superseded"`` or ``"trashed"``, ``archived_at``, and ``superseded_by`` for a
supersession), with its vector; for the index that is a logged removal (the next seq), like
forget. Every read of live memories (``list_rows``, ``iter_rows``, ``stats``, ``allowed``,
``changes_since``, ``rows_by_ordinal``, dedupe) ignores the archive; :meth:`Store.get` and
:meth:`Store.history` see both. Ids are unique across both. In :meth:`Store.write`, an item's
``supersedes`` names live memories of its bank (NotFoundError for an id that is no memory of
the bank, ConflictError for one archived already; the whole write fails then): dedupe then
ignores the listed memories (an edit of a memory's context keeps its content), and each listed
memory other than the one the item resolves to (itself, or the live memory it deduplicates
into) is archived as superseded by that one, one logged removal each, then the item is added
(the seq after). A document replace archives the document's previous memory as superseded by
the new one (its removal, then the addition, as before). :meth:`Store.forget` with ``trash``
archives as trashed; :meth:`Store.restore` takes a trashed memory back (a new ordinal, the next
seq: ordinals are never reused); :meth:`Store.empty_trash` and :meth:`Store.purge` delete for
good. Purge relinks the chain (whatever the purged memory superseded is then superseded by its
successor) and, since an index keeps the vocabulary of what it removed, drops the bank's
snapshot and prunes the log at a new seq, so every index sees a gap and rebuilds from the rows.
A reembed's switch drops the archive's vectors (they belong to the old space).
A copy of a store reads the archive with :meth:`Store.archive_page` and writes it with
:meth:`Store.import_archived` (an import: ids already present are skipped; each archived
memory takes a seq as its ordinal, so ordinals stay unique among a bank's versions).

TTL. :meth:`Store.expire` removes the memories with ``created_at`` before the cutoff (text
order is time order), in ordinal order, one logged removal each. :meth:`Store.allowed` hides
them from recall at once, but ignores a cutoff that no memory is older than;
:meth:`Store.expiring` lists them (and the next ``created_at``) without reading the others.

Config. A JSON object per bank, kept as JSON (what comes back equals ``json.loads`` of what
was stored). :meth:`Store.update_config` reads, transforms and writes it atomically: the
function runs inside the transaction, and if it raises nothing changes.

Snapshots. One per bank: ``(seq, shell, data)``. :meth:`Store.save_snapshot` refuses (returns
False) a snapshot of the same ``shell`` older than the stored one, or of the same ``seq``
unless ``replace_same``, one older than the last pruned point (a reembed), and one of a
deleted bank; a snapshot of another shell format is always replaced. Storing prunes the
removal log up to ``seq``. :meth:`Store.load_snapshot` returns it only for the same ``shell``.

Reembed (:meth:`memwire.Memory.reembed`). At most one unfinished re-encoding per bank, into one
space, with a cursor ``done_through``. :meth:`Store.start_reembed` resumes the one into the
same space or discards any other and starts at 0; :meth:`Store.stage_vectors` stages vectors
beside the live ones and advances the cursor (never backwards); :meth:`Store.finish_reembed`
swaps every live memory's vector for its staged one (none staged: no vector), records the
space, takes the next seq and prunes the log there (dropping the snapshot), so every index of
the old vectors sees a gap and reloads; it changes nothing and returns None while memories
above the cursor exist. Staging or finishing a reembed that is gone raises
:class:`~memwire.errors.ConflictError`, or :class:`~memwire.errors.NotFoundError` when the bank
itself is gone.

Orders. :meth:`Store.bank_names` by name; :meth:`Store.list_rows` newest ``created_at`` first,
ties by higher ordinal; :meth:`Store.iter_rows`, :meth:`Store.reembed_page`, ``changes_since``
additions and :meth:`Store.allowed` by ordinal.

Errors and threads. A store is safe to share between threads. Its own failures are opaque
:class:`~memwire.errors.StorageError` messages (no SQL, paths or tracebacks); a closed store
raises ``StorageError("the store is closed")``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from reprlib import recursive_repr
from typing import Any, ClassVar, NamedTuple, Protocol, runtime_checkable

# The kernel's limit (an ordinal is a key of its index, a u32), from native/constants.toml:
# tests/test_constants.py refuses a hand-written copy.
from memwire._kernel.contract import MAX_ORDINAL

__all__ = [
    "CLOSED",
    "EXHAUSTED",
    "LIVE",
    "MAX_ORDINAL",
    "NO_SPACE",
    "SUPERSEDED",
    "TRASHED",
    "Addition",
    "Additions",
    "Allowed",
    "ArchivedMemory",
    "BankHead",
    "BankStats",
    "Changes",
    "Expired",
    "NewMemory",
    "ReembedItem",
    "ReembedState",
    "Row",
    "Snapshot",
    "Space",
    "StagedVector",
    "Store",
    "Version",
    "WriteResult",
    "document_conflict",
    "reembed_gone",
    "reembed_moved",
    "space_mismatch",
]

EXHAUSTED = "the bank has exhausted its ordinals"
LIVE = "live"
SUPERSEDED = "superseded"
TRASHED = "trashed"
CLOSED = "the store is closed"
NO_SPACE = "vectors need an embedder space"


class Space(NamedTuple):
    """An embedder space: vectors of one embedder, of one dimension. A tuple, so it compares
    equal to the ``(id, dim)`` that :func:`memwire.embed.check_embedder` returns."""

    embedder: str
    dim: int


class _Record:
    """The ``__eq__``, ``__hash__`` and ``__repr__`` that ``@dataclass(frozen=True)`` generates,
    written once for every record below (which keep dataclass's ``__init__`` and frozen
    ``__setattr__``): dataclasses compile new source for each method of each class at import,
    and these three were a third of this module's import, on the path of ``memwire serve`` to
    its first ``/health`` (docs/BENCHMARKS.md, "Serve start-up and idle RSS (session 11)").
    Same semantics: equal when of the same class with equal fields, in order."""

    __slots__ = ()
    __dataclass_fields__: ClassVar[dict[str, Any]]

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__dataclass_fields__)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    @recursive_repr()
    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__dataclass_fields__)
        return f"{self.__class__.__qualname__}({shown})"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class NewMemory(_Record):
    """One validated, redacted, normalised memory to write."""

    id: str
    content: str
    context: str | None
    tags: tuple[str, ...]
    created_at: str
    retained_at: str
    document_id: str | None
    update_mode: str  # "replace" or "append"
    content_hash: bytes  # SHA-256 of content: what dedupe compares
    vector: bytes | None = None  # canonical int16 LE, in the space given to Store.write
    supersedes: tuple[str, ...] = ()  # live memories of the bank this one supersedes


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ArchivedMemory(_Record):
    """A superseded or trashed memory to import as it is (:meth:`Store.import_archived`)."""

    memory: NewMemory  # its columns and vector (update_mode and supersedes are not used)
    status: str  # SUPERSEDED or TRASHED
    superseded_by: str | None
    archived_at: str


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Row(_Record):
    """A stored memory (dates as fixed-width UTC text, so text order is time order)."""

    id: str
    bank: str
    ordinal: int
    content: str
    context: str | None
    tags: tuple[str, ...]
    created_at: str
    retained_at: str
    document_id: str | None
    status: str = LIVE  # LIVE, SUPERSEDED or TRASHED
    superseded_by: str | None = None  # the memory that superseded this one
    archived_at: str | None = None  # when it stopped being live (archived rows only)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Version(_Record):
    """A memory live at some instant (:meth:`Store.versions_at`), with its vector."""

    row: Row
    vector: bytes | None


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Addition(_Record):
    """A memory to add to an index: its ordinal, the text to index, its vector (int16 LE)."""

    ordinal: int
    content: str
    context: str | None
    vector: bytes | None


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Additions(_Record):
    """Memories to add to an index, by ordinal, as columns: what ``BankIndex.add_many`` takes.
    One record per batch rather than one per memory, because replaying 100k memories must cost
    no more than reading them; iterate it for one :class:`Addition` per memory."""

    ordinals: list[int]
    contents: list[str]
    contexts: list[str | None]
    vectors: list[bytes | None]

    def __post_init__(self) -> None:
        size = len(self.ordinals)
        if not len(self.contents) == len(self.contexts) == len(self.vectors) == size:
            raise ValueError("Additions columns differ in length")

    @classmethod
    def of(cls, items: Iterable[Addition]) -> Additions:
        return cls.from_rows([(a.ordinal, a.content, a.context, a.vector) for a in items])

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[int, str, str | None, bytes | None]]) -> Additions:
        """From ``(ordinal, content, context, vector)`` rows, e.g. a database cursor. Each row
        is dropped as soon as it is read: holding 100k row tuples at once costs more (the
        cyclic GC scans them) than building the columns."""
        ordinals: list[int] = []
        contents: list[str] = []
        contexts: list[str | None] = []
        vectors: list[bytes | None] = []
        for ordinal, content, context, vector in rows:
            ordinals.append(ordinal)
            contents.append(content)
            contexts.append(context)
            vectors.append(vector)
        return cls(ordinals, contents, contexts, vectors)

    def __len__(self) -> int:
        return len(self.ordinals)

    def __iter__(self) -> Iterator[Addition]:
        return map(Addition, self.ordinals, self.contents, self.contexts, self.vectors)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class WriteResult(_Record):
    """What one committed write transaction changed in one bank (the net change: applying
    ``removed`` then ``added`` to an index at ``first_seq`` brings it to ``last_seq``)."""

    bank: str
    bank_id: int
    ids: list[str]  # write: one per item, in order; forget and expire: the removed ids
    added: Additions  # live after the write, by ordinal
    removed: list[int]  # ordinals live before the write, in removal order
    first_seq: int  # the bank's last_seq before the write
    last_seq: int  # and after it
    dim: int | None = None  # write: the bank's vector dimension after it (0: no space yet)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Expired(_Record):
    """What :meth:`Store.expire` found (and, unless a dry run, removed)."""

    ids: list[str]  # by ordinal
    result: WriteResult | None  # None for a dry run or when nothing expired


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class BankHead(_Record):
    """A bank's current state: enough to decide whether an index is current."""

    bank_id: int
    last_seq: int
    config: dict[str, Any]
    embedder: str | None = None  # the recorded embedder space, None until the first vector
    dim: int = 0

    @property
    def space(self) -> Space | None:
        return None if self.embedder is None else Space(self.embedder, self.dim)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class BankStats(_Record):
    count: int
    tags: dict[str, int]  # tag -> memories with it, by tag
    oldest: str | None  # the smallest created_at, None for an empty bank
    newest: str | None


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Allowed(_Record):
    """The memories of a bank that pass recall's filters: ``ordinals`` ascending, or None when
    no memory is filtered out (search without a filter)."""

    ordinals: list[int] | None

    @property
    def nothing(self) -> bool:
        """True when the filters leave no memory at all."""
        return self.ordinals is not None and not self.ordinals


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Expiring(_Record):
    """A TTL bank's memories past a cutoff (:meth:`Store.expiring`): the ``ordinals`` of those
    with ``created_at`` before it, ascending, and ``next_at``, the least ``created_at`` at or
    after it (None when no memory is that new)."""

    ordinals: list[int]
    next_at: str | None


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Changes(_Record):
    """What to apply to an index at ``since`` to bring it to ``last_seq``.

    ``gap`` is true when removals after ``since`` were pruned: the caller must rebuild (ask
    again with ``since=0`` into a fresh index); ``added`` and ``removed`` are empty then.
    """

    last_seq: int
    added: Additions
    removed: list[int]
    gap: bool


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Snapshot(_Record):
    seq: int  # the change sequence the snapshot reflects
    # A snapshot read in parts is assembled in one bytearray: never mutated after.
    data: bytes | bytearray


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ReembedState(_Record):
    """An unfinished re-encoding of bank ``bank_id`` into ``space``: every live memory with an
    ordinal up to ``done_through`` has a staged vector of that space."""

    bank_id: int
    space: Space
    done_through: int


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ReembedItem(_Record):
    """A memory to re-encode."""

    ordinal: int
    content: str
    context: str | None


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class StagedVector(_Record):
    """A re-encoded vector (None: the embedder gives this memory none)."""

    ordinal: int
    vector: bytes | None


@runtime_checkable
class Store(Protocol):
    """Banks of memories, their change log, index snapshots and re-encodings. The semantics
    are the module's docstring; every method is atomic."""

    @property
    def durable(self) -> bool:
        """Whether what is written outlives the process (False for ``:memory:``): index
        snapshots are written only to durable stores."""
        ...

    def close(self) -> None:
        """Release the store; idempotent. Every later call raises StorageError."""
        ...

    # -- banks -------------------------------------------------------------------------------
    def head(self, bank: str) -> BankHead | None:
        """The bank's id, ``last_seq``, config and space; None if there is no such bank."""
        ...

    def bank_names(self) -> list[str]:
        """Every bank, sorted by name."""
        ...

    def delete_bank(self, bank: str) -> bool:
        """Remove the bank and everything of it; whether it existed."""
        ...

    def get_config(self, bank: str) -> dict[str, Any] | None:
        """A fresh copy of the bank's config; None if there is no such bank."""
        ...

    def update_config(
        self, bank: str, update: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> dict[str, Any]:
        """Store ``update(current)`` (creating the bank with ``{}``) in one transaction and
        return it; if ``update`` raises, nothing changes."""
        ...

    # -- writes ------------------------------------------------------------------------------
    def write(
        self,
        bank: str,
        items: Sequence[NewMemory],
        config_tags: Callable[[Mapping[str, Any]], list[str]] | None = None,
        imported: bool = False,
        space: Space | None = None,
    ) -> WriteResult:
        """Write ``items`` into ``bank`` (created if absent, even with no items) in one
        transaction: dedupe, document upsert, import skips and ordinals as the module says.
        ``config_tags(config)``: tags added to every new memory; ``space``: the space of the
        items' vectors, recorded as the bank's at its first vector."""
        ...

    def forget(
        self, memory_id: str, bank: str | None, *, trash: bool = False
    ) -> WriteResult | None:
        """Remove one live memory (a logged removal), to the trash with ``trash``; None when
        no live memory has that id (in ``bank``, when given)."""
        ...

    def retag(self, memory_id: str, bank: str, tags: Sequence[str]) -> WriteResult | None:
        """Replace a live memory's tags in place (same id and ordinal), as a change of its
        own: the next seq, with nothing added or removed (an index has no tags; a tag filter
        kept beside one is rebuilt). None when no live memory of ``bank`` has that id."""
        ...

    def expire(self, bank: str, cutoff: str, dry_run: bool) -> Expired:
        """Remove the bank's memories with ``created_at < cutoff``, by ordinal (with
        ``dry_run``, only find them)."""
        ...

    # -- history and trash (the module's "History") ----------------------------------------
    def restore(
        self,
        memory_id: str,
        bank: str | None,
        *,
        vector: bytes | None = None,
        space: Space | None = None,
    ) -> WriteResult:
        """Make a trashed memory live again (same id, the next seq as its new ordinal);
        NotFoundError when it is not in the trash (of ``bank``), ConflictError when a live
        memory of the bank has its document id or its content.

        ``vector`` (of ``space``) is the memory's vector for when its archived copy has none
        (a reembed dropped the archive's vectors): it is kept only if ``space`` is the bank's
        recorded space at the restore, and never replaces an archived vector."""
        ...

    def empty_trash(self, bank: str, before: str | None) -> list[str]:
        """Hard-delete the bank's trashed memories (archived before ``before``, when given);
        their ids."""
        ...

    def purge(self, memory_id: str, bank: str | None) -> WriteResult | None:
        """Hard-delete one memory in any state, relink its history past it, drop the bank's
        snapshot and log a gap (the next seq, pruned) so every index rebuilds from the rows;
        None when there is no such memory (in ``bank``)."""
        ...

    def history(self, memory_id: str) -> list[Row]:
        """Every version of the chain ``memory_id`` belongs to, oldest ``retained_at`` first
        (then by id); [] when there is no such memory."""
        ...

    def trash_rows(self, bank: str, limit: int, offset: int) -> list[Row]:
        """A page of the bank's trash, newest ``archived_at`` first (then by id)."""
        ...

    def versions_at(self, bank_id: int, at: str) -> list[Version]:
        """The memories live at ``at``: live ones retained at or before it and archived ones
        retained at or before it and archived after it, by ordinal."""
        ...

    def archive_page(self, bank_id: int, after: int, limit: int) -> list[Version]:
        """A page of the bank's archive (superseded and trashed memories) with their vectors,
        ordinals above ``after``, by ordinal: what a copy of the store reads."""
        ...

    def import_archived(
        self, bank: str, items: Sequence[ArchivedMemory], space: Space | None = None
    ) -> list[str]:
        """Add archived memories to ``bank`` (created if absent) as they are, in one
        transaction, in order: an id already in the store is skipped; each other one takes the
        next seq as its ordinal (nothing is logged: it is not live) with its status,
        superseded_by and archived_at, and its tags as given. ``space`` as in :meth:`write`.
        The ids added."""
        ...

    def vacuum(self) -> None:
        """Compact the store so the bytes of deleted rows leave its files."""
        ...

    # -- reads -------------------------------------------------------------------------------
    def get(self, memory_id: str) -> Row | None:
        """The memory ``memory_id``, live or archived (with its status)."""
        ...

    def rows_by_ordinal(self, bank_id: int, ordinals: Sequence[int]) -> dict[int, Row]:
        """The live memories among ``ordinals`` (others are left out), by ordinal."""
        ...

    def list_rows(self, bank: str, limit: int, offset: int) -> list[Row]:
        """A page of the bank's memories, newest ``created_at`` first, ties by higher ordinal."""
        ...

    def iter_rows(self, bank: str) -> Iterator[Row]:
        """Every memory of the bank by ordinal. Memories written or removed while iterating
        may or may not be seen (this is not one point-in-time view)."""
        ...

    def stats(self, bank: str) -> BankStats | None:
        """Count, tag counts and date range; None if there is no such bank."""
        ...

    def allowed(
        self,
        bank_id: int,
        tags: Sequence[str],
        exclude_tags: Sequence[str],
    ) -> Allowed:
        """The memories with one of ``tags`` (when given) and none of ``exclude_tags``.
        ``Allowed(None)`` when nothing is filtered out. (Time cutoffs are not filtered here: a
        TTL bank's expired memories come from :meth:`expiring`.)"""
        ...

    def expiring(self, bank_id: int, cutoff: str) -> Expiring:
        """The live memories with ``created_at`` before ``cutoff`` and the next ``created_at``
        (both read through the ``(bank_id, created_at)`` index: the cost is that of the
        memories found, not of the bank). Recall keeps the expired ordinals out of the kernel's
        search with it (memory/expiry.py) instead of listing the live ones."""
        ...

    # -- index support -----------------------------------------------------------------------
    def changes_since(self, bank_id: int, since: int) -> Changes | None:
        """What an index at ``since`` lacks (the module's "Removals and replay"); None if the
        bank is gone. ``since=0``: every live memory, no removals."""
        ...

    def load_snapshot(self, bank_id: int, shell: str) -> Snapshot | None:
        """The bank's snapshot if it has one of format ``shell``."""
        ...

    def save_snapshot(
        self, bank_id: int, seq: int, data: bytes, shell: str, *, replace_same: bool = False
    ) -> bool:
        """Store a snapshot reflecting the changes up to ``seq`` and prune the removal log up
        to it; False (nothing changed) when refused by the module's "Snapshots" rules."""
        ...

    # -- re-encoding (Memory.reembed) --------------------------------------------------------
    def reembed_state(self, bank: str) -> ReembedState | None:
        """The bank's unfinished reembed, or None."""
        ...

    def start_reembed(self, bank: str, space: Space) -> ReembedState:
        """Resume the bank's reembed into ``space`` or start one (discarding one into another
        space); NotFoundError if there is no such bank."""
        ...

    def reembed_page(self, bank_id: int, after: int, limit: int) -> list[ReembedItem]:
        """Up to ``limit`` live memories with ordinals above ``after``, by ordinal."""
        ...

    def stage_vectors(
        self, bank_id: int, space: Space, vectors: Sequence[StagedVector], through: int
    ) -> None:
        """Stage re-encoded vectors (a later one for the same ordinal wins) and advance the
        cursor to ``through``, in one transaction; ConflictError unless the bank's reembed is
        still the one into ``space``."""
        ...

    def finish_reembed(self, bank_id: int, space: Space) -> int | None:
        """Switch the bank to the staged vectors and ``space``; the new ``last_seq``, or None
        (nothing changed) when memories above the cursor remain to be encoded."""
        ...

    def count_rows(self, bank_id: int, after: int = 0) -> int:
        """How many live memories have ordinals above ``after``."""
        ...


def space_mismatch(bank: str, recorded: tuple[str, int], offered: tuple[str, int]) -> str:
    """The message of a bank refusing another embedder space."""
    return (
        f"bank {bank!r} holds vectors of embedder {recorded[0]!r} (dim {recorded[1]}), not "
        f"{offered[0]!r} (dim {offered[1]}); open it with that embedder, set its config "
        f"'embedder' to 'none', or re-encode it with Memory.reembed"
    )


def document_conflict(bank: str, document_id: str) -> str:
    """The message of an ``append`` to a document that already has a memory."""
    return (
        f"document {document_id!r} already has a memory in bank {bank!r}; use "
        "update_mode='replace' to replace it"
    )


def reembed_gone(bank_exists: bool) -> str:
    """The message of staging or finishing a reembed that no longer exists."""
    if not bank_exists:
        return "the bank was deleted during reembed"
    return "the reembed was finished or discarded by another process"


def reembed_moved(embedder: str) -> str:
    """The message of staging or finishing a reembed replaced by one into another space."""
    return f"another process started a reembed into {embedder!r} meanwhile"
