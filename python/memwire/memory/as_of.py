"""Recall as of an instant (:meth:`memwire.Memory.recall` with ``as_of``): the memories live
then, from the store's live and archived rows (:meth:`memwire.store.Store.versions_at`), with
recall's filters applied to them here.

The bank's index holds its live memories only, so such a recall indexes the versions for the
call, with the same kernel: both backends rank them as they rank a bank. That costs time and
memory linear in the bank's history (every version ever retained and not deleted), once per
call; a recall without ``as_of`` pays nothing for it.
"""

from __future__ import annotations

from collections.abc import Sequence

from memwire import _dates
from memwire.store import Additions, Row, Version

__all__ = ["as_of_moment", "versions_view"]


def as_of_moment(value: object) -> str | None:
    """The stored form of ``as_of`` (a datetime, naive meaning UTC, or an ISO 8601 string);
    None for None or an instant not in the past (then recall is an ordinary one)."""
    if value is None:
        return None
    moment = _dates.parse_created_at(value, "as_of")
    if moment >= _dates.now_utc():
        return None
    return _dates.format_utc(moment)


def versions_view(
    versions: Sequence[Version],
    tags: Sequence[str],
    exclude_tags: Sequence[str],
    cutoff: str | None,
) -> tuple[Additions, list[int] | None, dict[int, Row]]:
    """What to index of ``versions``, the ordinals that pass recall's filters (None: all) and
    the rows by ordinal. The filters are those of :meth:`memwire.store.Store.allowed`."""
    rows = {v.row.ordinal: v.row for v in versions}
    additions = Additions.from_rows(
        (v.row.ordinal, v.row.content, v.row.context, v.vector) for v in versions
    )
    if not tags and not exclude_tags and cutoff is None:
        return additions, None, rows
    want, avoid = set(tags), set(exclude_tags)
    allow = [
        o
        for o, r in rows.items()
        if (not want or want.intersection(r.tags))
        and not avoid.intersection(r.tags)
        and (cutoff is None or r.created_at >= cutoff)
    ]
    return additions, sorted(allow), rows
