"""The operations every door shares: check a JSON request, call the Memory API, shape the answer.

HTTP routes, MCP tools and the CLI's ``--json`` output all go through these functions, so a
request that fails fails with the same message everywhere, and a result has the same shape
everywhere. The fields each operation takes, their types and ranges, come from the one table in
:mod:`memwire.server.fields` (:func:`read`). Nothing here imports a web framework: the CLI uses
it without loading one.

Every function raises only :mod:`memwire.errors` exceptions on purpose: an
:class:`~memwire.errors.InvalidInputError` for a bad field (the message names the field), a
:class:`~memwire.errors.NotFoundError` for a missing memory or bank, a
:class:`~memwire.errors.ConflictError` for a request the stored state refuses. Anything else is
a bug or a storage failure, which the caller turns into an opaque error.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memwire.errors import InvalidInputError, NotFoundError
from memwire.server import fields as _fields
from memwire.server.fields import RECALL_FORMATS, Field

if TYPE_CHECKING:
    from memwire.memory import Memory

__all__ = [
    "RECALL_FORMATS",
    "banks",
    "config_get",
    "config_put",
    "delete_bank",
    "empty_trash",
    "forget",
    "get",
    "health_report",
    "history",
    "jsonable",
    "memories",
    "opt_bool",
    "opt_int",
    "opt_number",
    "opt_str",
    "opt_str_list",
    "purge",
    "query_params",
    "read",
    "recall",
    "recall_hits",
    "reflect",
    "req_items",
    "restore",
    "retain",
    "retain_conversation",
    "retain_many",
    "stats",
    "trash",
    "update",
    "vacuum",
]

# -- field checks ------------------------------------------------------------------------------


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def require_object(body: object) -> Mapping[str, Any]:
    """The request body must be a JSON object."""
    if not isinstance(body, Mapping):
        raise InvalidInputError(f"the request body must be a JSON object, got {_type_name(body)}")
    return body


def req_str(body: Mapping[str, Any], name: str) -> str:
    value = body.get(name)
    if value is None:
        raise InvalidInputError(f"{name} is required")
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string, got {_type_name(value)}")
    return value


def opt_str(body: Mapping[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string, got {_type_name(value)}")
    return value


def opt_int(body: Mapping[str, Any], name: str, low: int, high: int) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{name} must be an integer, got {_type_name(value)}")
    if not low <= value <= high:
        raise InvalidInputError(f"{name} must be between {low} and {high}, got {value}")
    return value


def opt_str_list(body: Mapping[str, Any], name: str) -> list[str] | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, (list, tuple)):
        raise InvalidInputError(f"{name} must be an array of strings, got {_type_name(value)}")
    for item in value:
        if not isinstance(item, str):
            raise InvalidInputError(f"{name} must be an array of strings, found {_type_name(item)}")
    return list(value)


def opt_objects(body: Mapping[str, Any], name: str, required: bool) -> list[Any] | None:
    """An array of JSON objects (what each object holds is the Memory API's to check)."""
    value = body.get(name)
    if value is None:
        if required:
            raise InvalidInputError(f"{name} is required")
        return None
    if not isinstance(value, (list, tuple)):
        raise InvalidInputError(f"{name} must be an array of objects, got {_type_name(value)}")
    for position, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise InvalidInputError(f"{name}[{position}] must be an object, got {_type_name(item)}")
    return list(value)


def opt_choice(body: Mapping[str, Any], name: str, choices: Sequence[str]) -> str | None:
    value = opt_str(body, name)
    if value is not None and value not in choices:
        raise InvalidInputError(
            f"{name} must be one of {', '.join(repr(c) for c in choices)}, got {value!r}"
        )
    return value


def opt_number(body: Mapping[str, Any], name: str) -> float | int | None:
    """A JSON number (its range is the Memory API's to check, with its own message)."""
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"{name} must be a number, got {_type_name(value)}")
    return value


def opt_bool(body: Mapping[str, Any], name: str) -> bool | None:
    """JSON true or false."""
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise InvalidInputError(f"{name} must be true or false, got {_type_name(value)}")
    return value


def check_field(body: Mapping[str, Any], field: Field) -> Any:
    """One field of ``body``, checked as the table says; its default when absent or null."""
    name = field.name
    value: Any
    if field.kind == "string":
        value = req_str(body, name) if field.required else opt_str(body, name)
    elif field.kind == "integer":
        value = opt_int(body, name, *_int_range(field))
    elif field.kind == "number":
        value = opt_number(body, name)
    elif field.kind == "boolean":
        value = opt_bool(body, name)
    elif field.kind == "strings":
        value = opt_str_list(body, name)
    elif field.kind == "turns":
        value = opt_objects(body, name, field.required)
    elif field.kind == "items":
        value = req_items(body, field)
    else:
        value = opt_choice(body, name, field.choices or ())
    return field.default if value is None else value


def req_items(body: Mapping[str, Any], field: Field) -> list[Any]:
    """A non-empty array of memories, each a string or an object of retain's fields (checked
    as ``retain`` checks them; ``items[i]: `` names the first bad one)."""
    value = body.get(field.name)
    if value is None:
        raise InvalidInputError(f"{field.name} is required")
    if not isinstance(value, (list, tuple)):
        raise InvalidInputError(f"{field.name} must be an array, got {_type_name(value)}")
    most = field.max_count
    if not value or (most is not None and len(value) > most):
        raise InvalidInputError(
            f"{field.name} must hold 1 to {most:,} memories, got {len(value):,}"
        )
    taken = _fields.fields_for("retain_many_item")
    out: list[Any] = []
    for position, item in enumerate(value):
        if isinstance(item, str):
            out.append(item)
            continue
        try:
            entry = require_object(item)
            _fields.reject_unknown(entry, "retain_many_item")
            checked = {f.name: check_field(entry, f) for f in taken}
        except InvalidInputError as exc:
            message = str(exc).replace("the request body must be", "each item must be", 1)
            raise InvalidInputError(f"{field.name}[{position}]: {message}") from None
        out.append({k: v for k, v in checked.items() if v is not None})
    return out


def read(body: object, operation: str) -> dict[str, Any]:
    """Every field ``operation`` takes (at any door), checked, by wire name; a field it does
    not take is refused, naming it (each door's own check may be narrower: MCP's schema)."""
    body = require_object(body)
    _fields.reject_unknown(body, operation)
    return {f.name: check_field(body, f) for f in _fields.fields_for(operation)}


def query_params(params: Mapping[str, str], operation: str) -> dict[str, Any]:
    """The integer query-string fields of ``operation`` (``?limit=10&offset=20``), checked;
    an unknown parameter is refused, naming it."""
    _fields.reject_unknown(params.keys(), operation, "http", what="query parameter")
    out: dict[str, Any] = {}
    for field in _fields.fields_for(operation, "http"):
        default = field.default if isinstance(field.default, int) else None
        if field.kind != "integer" or default is None:  # pragma: no cover - table bug
            raise TypeError(f"{field.key} is not an integer query parameter with a default")
        raw = params.get(field.name)
        out[field.name] = parse_int_param(raw, field.name, default, *_int_range(field))
    return out


def _int_range(field: Field) -> tuple[int, int]:
    low, high = field.minimum, field.maximum
    if not isinstance(low, int) or not isinstance(high, int):  # pragma: no cover - table bug
        raise TypeError(f"{field.key} has no integer range")
    return low, high


def parse_int_param(raw: str | None, name: str, default: int, low: int, high: int) -> int:
    """A query-string integer (``?limit=10``)."""
    if raw is None or raw == "":
        return default
    text = raw.strip()
    if not (text.isascii() and (text.isdigit() or (text[:1] == "-" and text[1:].isdigit()))):
        raise InvalidInputError(f"{name} must be an integer, got {raw[:40]!r}")
    value = int(text)
    if not low <= value <= high:
        raise InvalidInputError(f"{name} must be between {low} and {high}, got {value}")
    return value


# -- result shaping ----------------------------------------------------------------------------


def jsonable(value: Any) -> Any:
    """Turn API results (dataclasses, datetimes, tuples) into plain JSON values."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (_dt.datetime, _dt.date)):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if hasattr(value, "_asdict"):
        return jsonable(value._asdict())
    return str(value)


def _attr(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def memory_record(obj: Any) -> dict[str, Any]:
    """One stored memory as JSON: ``id, content, context, tags, created_at`` and the rest."""
    record = jsonable(obj)
    if not isinstance(record, dict):  # pragma: no cover - defensive
        raise TypeError("a memory record must be an object")
    if "tags" in record and record["tags"] is None:
        record["tags"] = []
    return record


def hit_full(hit: Any) -> dict[str, Any]:
    """A recall hit as every door's full answer shows it (HTTP ``format: "full"``, MCP, the
    CLI's ``--json``): memory-wire's fields, and the context (null when none), which says where
    a memory was said: the turns around a conversation's line, a note's source."""
    return {
        "id": _attr(hit, "id"),
        "score": jsonable(_attr(hit, "score")),
        "created_at": jsonable(_attr(hit, "created_at")),
        "content": _attr(hit, "content"),
        "context": _attr(hit, "context"),
        "tags": jsonable(list(_attr(hit, "tags", ()) or ())),
    }


# -- health ------------------------------------------------------------------------------------


def health_report(memory: Memory) -> dict[str, Any]:
    """``GET /health?details=1``: :meth:`Memory.health` as JSON, ``status`` ``"ok"`` or
    ``"unhealthy"``. A server's Memory that is not built yet is not built for this (the
    stand-in answers from its store: no background work has started, the loss check ran when
    the store was opened)."""
    lazy = getattr(type(memory), "health_report", None)  # the type: the stand-in forwards
    if lazy is not None:
        found: dict[str, Any] = lazy(memory)
        return found
    return shape_health(memory.health(), loaded=True)


def shape_health(health: Any, *, loaded: bool) -> dict[str, Any]:
    """A :class:`~memwire.memory.health.Health` (or the same fields) as JSON."""
    loss = _attr(health, "loss")
    report = {
        "status": "ok" if _attr(health, "ok") else "unhealthy",
        "memory": "loaded" if loaded else "not loaded yet",
        "background": _attr(health, "background"),
        "working_on": _attr(health, "working_on"),
        "working_for_s": jsonable(_attr(health, "working_for_s")),
        "stuck": bool(_attr(health, "stuck")),
        "pending": jsonable(_attr(health, "pending", ())),
        "failures": jsonable(_attr(health, "failures", ())),
        "loss": None if loss is None else {**jsonable(loss), "detail": loss.describe()},
    }
    return report


# -- operations --------------------------------------------------------------------------------


def retain(memory: Memory, bank: str, body: object) -> dict[str, Any]:
    """``{content, tags?, context?, created_at?, document_id?, update_mode?, supersedes?}`` ->
    ``{id}``.

    A second memory for a document in ``append`` mode raises ConflictError; so does a
    superseded id that is not live (NotFoundError when there is no such memory)."""
    f = read(body, "retain")
    memory_id = memory.retain(
        f["content"],
        bank=bank,
        tags=tuple(f["tags"] or ()),
        context=f["context"],
        created_at=f["created_at"],
        document_id=f["document_id"],
        update_mode=f["update_mode"],
        supersedes=tuple(f["supersedes"] or ()),
    )
    return {"id": memory_id}


def retain_conversation(memory: Memory, bank: str, body: object) -> dict[str, Any]:
    """``{turns, before?, after?, tags?}`` -> ``{ids}``: one memory per turn, in order. The
    whole conversation is checked before anything is written."""
    f = read(body, "retain_conversation")
    ids = memory.retain_conversation(
        f["turns"], bank=bank, before=f["before"], after=f["after"], tags=f["tags"]
    )
    return {"ids": ids}


def retain_many(memory: Memory, bank: str, body: object) -> dict[str, Any]:
    """``{items: [string | {content, tags?, ...}]}`` -> ``{ids}``, one id per item in order.
    All or nothing: every item is checked before any is written, in one transaction."""
    f = read(body, "retain_many")
    return {"ids": memory.retain_many(f["items"], bank=bank)}


def recall_hits(memory: Memory, bank: str, f: Mapping[str, Any]) -> list[Any]:
    """``Memory.recall`` with the checked recall fields ``f`` (from ``read(body, "recall")``):
    the one call every door that recalls makes."""
    return memory.recall(
        f["query"],
        bank=bank,
        limit=f["limit"],
        budget=f["budget"],
        tags=f["tags"],
        exclude_tags=f["exclude_tags"],
        min_score=f["min_score"],
        as_of=f["as_of"],
        near_duplicate=f["near_duplicate"],
        prefer_newest=f["prefer_newest"],
    )


def recall(memory: Memory, bank: str, body: object) -> list[Any]:
    """``{query, budget?, limit?, tags?, exclude_tags?, format?, min_score?, as_of?,
    near_duplicate?, prefer_newest?}`` -> strings or full hits."""
    f = read(body, "recall")
    hits = recall_hits(memory, bank, f)
    if f["format"] == "full":
        return [hit_full(h) for h in hits]
    return [_attr(h, "content") for h in hits]


def reflect(memory: Memory, bank: str, body: object) -> dict[str, Any]:
    """``{query, min_score?}`` -> ``{text}``: the best memories, cited and dated, as one block."""
    f = read(body, "reflect")
    return {"text": memory.reflect(f["query"], bank=bank, min_score=f["min_score"])}


def _where(bank: str | None) -> str:
    return "" if bank is None else f" in bank {bank!r}"


def get(memory: Memory, bank: str | None, memory_id: str) -> dict[str, Any]:
    """One memory (in ``bank``, or in any bank when ``None``)."""
    found = memory.get(memory_id, bank=bank)
    if found is None:  # pragma: no cover - Memory.get raises NotFoundError itself
        raise NotFoundError(f"no memory {memory_id!r}{_where(bank)}")
    return memory_record(found)


def _status(memory: Memory, bank: str | None, memory_id: str) -> str | None:
    """The status of a memory in any state (None: there is none, or it was purged)."""
    try:
        found = memory.get(memory_id, bank=bank)
    except NotFoundError:
        return None
    status: str = getattr(found, "status", "live")
    return status


def forget(memory: Memory, bank: str | None, memory_id: str) -> dict[str, Any]:
    """Forget one live memory: to the trash (``trashed: true``) when the bank keeps one
    (config ``trash_days`` > 0, the default), else deleted. A memory that is not live is a
    :class:`NotFoundError` that says where it is."""
    if not memory.forget(memory_id, bank=bank):
        status = _status(memory, bank, memory_id)
        if status is None:
            raise NotFoundError(f"no memory {memory_id!r}{_where(bank)}")
        raise NotFoundError(
            f"memory {memory_id!r}{_where(bank)} is not live (it is {status}); "
            "purge deletes it for good"
        )
    trashed = _status(memory, bank, memory_id) == "trashed"
    return {"id": memory_id, "forgotten": True, "trashed": trashed}


def update(memory: Memory, bank: str | None, body: object) -> dict[str, Any]:
    """``{id, content?, context?, tags?}`` -> the memory as it is now. New content or context
    makes a new memory (a new id) that supersedes ``id``; tags alone change it in place."""
    f = read(body, "update")
    new_id = memory.update(
        f["id"], bank=bank, content=f["content"], context=f["context"], tags=f["tags"]
    )
    return memory_record(memory.get(new_id, bank=bank))


def history(memory: Memory, bank: str | None, memory_id: str) -> dict[str, Any]:
    """``{id, versions}``: every version of the memory, oldest first, each with its status
    (live, superseded, trashed), dates and what superseded it."""
    versions = memory.history(memory_id, bank=bank)
    return {"id": memory_id, "versions": [memory_record(v) for v in versions]}


def trash(memory: Memory, bank: str, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
    """A page of the bank's trash, the last trashed first."""
    return [memory_record(m) for m in memory.trash(bank=bank, limit=limit, offset=offset)]


def restore(memory: Memory, bank: str | None, memory_id: str) -> dict[str, Any]:
    """A trashed memory is live again, same id."""
    return {"id": memory.restore(memory_id, bank=bank), "restored": True}


def purge(memory: Memory, bank: str | None, memory_id: str) -> dict[str, Any]:
    """Delete one memory for good, in any state, from history and snapshots too."""
    if not memory.purge(memory_id, bank=bank):
        raise NotFoundError(f"no memory {memory_id!r}{_where(bank)}")
    return {"id": memory_id, "purged": True}


def empty_trash(memory: Memory, bank: str, body: object) -> dict[str, Any]:
    """``{older_than_days?}`` -> ``{bank, purged}``: how many trashed memories were deleted."""
    f = read(body, "empty_trash")
    count = memory.empty_trash(bank=bank, older_than_days=f["older_than_days"])
    return {"bank": bank, "purged": count}


def vacuum(memory: Memory) -> dict[str, Any]:
    """Compact the store, so the text of deleted memories leaves its files."""
    memory.vacuum()
    return {"vacuumed": True}


def memories(memory: Memory, bank: str, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
    return [memory_record(m) for m in memory.memories(bank=bank, limit=limit, offset=offset)]


def stats(memory: Memory, bank: str) -> dict[str, Any]:
    result = jsonable(memory.stats(bank=bank))
    if not isinstance(result, dict):  # pragma: no cover - defensive
        raise TypeError("stats must be an object")
    return result


def banks(memory: Memory) -> list[Any]:
    result = jsonable(memory.banks())
    return list(result)


def delete_bank(memory: Memory, bank: str) -> dict[str, Any]:
    deleted = memory.delete_bank(bank)
    if deleted is False:
        raise NotFoundError(f"no bank {bank!r}")
    return {"bank": bank, "deleted": True}


def config_get(memory: Memory, bank: str) -> dict[str, Any]:
    result = jsonable(memory.get_config(bank))
    if not isinstance(result, dict):  # pragma: no cover - defensive
        raise TypeError("config must be an object")
    return result


def config_put(memory: Memory, bank: str, body: object) -> dict[str, Any]:
    body = require_object(body)
    result = memory.set_config(bank, dict(body))
    if result is None:
        result = memory.get_config(bank)
    out = jsonable(result)
    if not isinstance(out, dict):  # pragma: no cover - defensive
        raise TypeError("config must be an object")
    return out
