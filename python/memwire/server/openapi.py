"""The OpenAPI 3.1 document served at ``/openapi.json``, written to match the routes.

Request bodies and parameters are generated from the field table
(:mod:`memwire.server.fields`), so their types, limits, defaults and help are the ones every
other door uses. Tests fuzz the server from this document (schemathesis), so a schema that
promises more or less than the server does shows up there.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any

from memwire.config import ACTING_KEYS_TEXT, EMBEDDER_MODES, MAX_RECALL_TOKENS, MEMORY_WIRE_KEY
from memwire.server import fields

__all__ = ["document", "request_schema"]

_STR_LIST = {"type": "array", "items": {"type": "string"}}
_NULLABLE_STR = {"type": ["string", "null"]}


def request_schema(operation: str, in_path: tuple[str, ...] = ()) -> dict[str, Any]:
    """The JSON body ``operation`` takes over HTTP: its fields, null meaning absent; those
    named in ``in_path`` come from the URL instead."""
    taken = [f for f in fields.fields_for(operation, "http") if f.name not in in_path]
    return {
        "type": "object",
        "additionalProperties": False,
        "required": [f.name for f in taken if f.required],
        "properties": {f.name: fields.json_schema(f, nullable=not f.required) for f in taken},
    }


def _parameter(field: fields.Field, where: str, name: str | None = None) -> dict[str, Any]:
    schema = fields.json_schema(field)
    description = schema.pop("description")
    if where == "path":  # a path segment is never absent, so it has no default
        schema.pop("default", None)
        description = fields.describe(field, with_default=False)
    return {
        "name": name or field.name,
        "in": where,
        "required": where == "path",
        "description": description,
        "schema": schema,
    }


def _error(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def _json(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _body(ref: str) -> dict[str, Any]:
    return {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}},
    }


def _responses(
    ok: dict[str, Any], *, body: bool = False, names: bool = True, conflict: bool = False
) -> dict[str, Any]:
    out: dict[str, Any] = {"200": ok}
    out["400"] = _error("Invalid bank id, body or field (the message says which)")
    out["401"] = _error("A bearer token is required (only when the server has one)")
    if names:
        out["404"] = _error("Unknown memory or bank")
    if conflict:
        out["409"] = _error("The stored state refuses the request; nothing was changed")
    if body:
        out["413"] = _error("Request body too large")
    out["500"] = _error("Internal error (opaque)")
    return out


@lru_cache(maxsize=1)
def _document() -> dict[str, Any]:
    from memwire import __version__

    bank = _parameter(fields.BANK, "path")
    (memory_id_field,) = fields.fields_for("get", "http")
    memory_id = _parameter(memory_id_field, "path", "memory_id")
    schemas: dict[str, Any] = {
        "Error": {
            "type": "object",
            "required": ["error"],
            "properties": {"error": {"type": "string"}},
        },
        "RetainRequest": request_schema("retain"),
        "RetainManyRequest": request_schema("retain_many"),
        "RetainManyResponse": {
            "type": "object",
            "required": ["ids"],
            "properties": {"ids": {"type": "array", "items": {"type": "string"}}},
        },
        "RetainResponse": {
            "type": "object",
            "required": ["id"],
            "properties": {"id": {"type": "string"}},
        },
        "ConversationRequest": request_schema("retain_conversation"),
        "ConversationResponse": {
            "type": "object",
            "required": ["ids"],
            "properties": {"ids": _STR_LIST},
        },
        "RecallRequest": request_schema("recall"),
        "Hit": {
            "type": "object",
            "required": ["id", "score", "created_at", "content", "context", "tags"],
            "properties": {
                "id": {"type": "string"},
                "score": {"type": "number"},
                "created_at": {"type": "string"},
                "content": {"type": "string"},
                "context": _NULLABLE_STR,
                "tags": _STR_LIST,
            },
        },
        "RecallResponse": {
            "anyOf": [
                {"type": "array", "items": {"type": "string"}},
                {"type": "array", "items": {"$ref": "#/components/schemas/Hit"}},
            ]
        },
        "ReflectRequest": request_schema("reflect"),
        "ReflectResponse": {
            "type": "object",
            "required": ["text"],
            "properties": {"text": {"type": "string"}},
        },
        "Memory": {
            "type": "object",
            "required": ["id", "content"],
            "properties": {
                "id": {"type": "string"},
                "bank": {"type": "string"},
                "content": {"type": "string"},
                "context": _NULLABLE_STR,
                "tags": _STR_LIST,
                "created_at": {"type": "string"},
                "retained_at": {"type": "string"},
                "document_id": _NULLABLE_STR,
                "status": {
                    "enum": ["live", "superseded", "trashed"],
                    "description": "live: in recall; superseded: replaced by a newer version "
                    "(superseded_by), kept in history; trashed: forgotten, restorable until "
                    "the bank's trash_days pass",
                },
                "superseded_by": _NULLABLE_STR,
                "archived_at": {
                    "type": ["string", "null"],
                    "description": "when it stopped being live (superseded or trashed)",
                },
            },
        },
        "UpdateRequest": request_schema("update", in_path=("id",)),
        "History": {
            "type": "object",
            "required": ["id", "versions"],
            "properties": {
                "id": {"type": "string"},
                "versions": {
                    "type": "array",
                    "items": {"$ref": "#/components/schemas/Memory"},
                    "description": "every version of the memory, oldest first",
                },
            },
        },
        "EmptyTrashRequest": request_schema("empty_trash"),
        "Config": {
            "type": "object",
            "description": f"Bank config. {ACTING_KEYS_TEXT} act (docs/storage.md); "
            "any other key is refused (400, naming it); a null value removes a key.",
            "additionalProperties": False,
            "properties": {
                "recall_max_tokens": {
                    "type": ["integer", "null"],
                    "minimum": 1,
                    "maximum": MAX_RECALL_TOKENS,
                },
                "retain_tags": {"type": ["array", "null"], "items": {"type": "string"}},
                "ttl_days": {"type": ["number", "null"], "exclusiveMinimum": 0},
                "trash_days": {
                    "type": ["integer", "null"],
                    "minimum": 0,
                    "description": "days a forgotten memory stays in the trash (default 30; "
                    "0: forget deletes at once)",
                },
                "embedder": {"enum": [*EMBEDDER_MODES, None]},
                "fusion_weights": {
                    "type": ["array", "null"],
                    "items": {"type": "number", "minimum": 0},
                    "minItems": 3,
                    "maxItems": 3,
                },
                "lookup_ratio": {"type": ["number", "null"], "minimum": 0},
                "min_score": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
                "near_duplicate": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
                "prefer_newest": {"type": ["boolean", "null"]},
                MEMORY_WIRE_KEY: {
                    "type": ["object", "null"],
                    "description": "a memory-wire client's config, kept verbatim by the /mw "
                    "routes (docs/compat.md)",
                },
            },
        },
        "Stats": {"type": "object"},
        "Health": {
            "type": "object",
            "required": ["status", "memory", "background", "stuck", "failures", "loss"],
            "properties": {
                "status": {"enum": ["ok", "unhealthy"]},
                "memory": {"enum": ["loaded", "not loaded yet"]},
                "background": {
                    "enum": ["idle", "working", "stopped", "dead", "not started"],
                },
                "working_on": _NULLABLE_STR,
                "working_for_s": {"type": ["number", "null"]},
                "stuck": {"type": "boolean"},
                "pending": _STR_LIST,
                "failures": {"type": "array", "items": {"type": "object"}},
                "loss": {"type": ["object", "null"]},
            },
        },
        "Deleted": {"type": "object"},
    }

    def ref(name: str) -> dict[str, Any]:
        return {"$ref": f"#/components/schemas/{name}"}

    paths: dict[str, Any] = {
        "/health": {
            "get": {
                "operationId": "health",
                "summary": "Liveness: answers the plain text `ok`, never needs a token; with "
                "`details=1`, Memory.health() as JSON (needs the token when one is set)",
                "security": [],
                "parameters": [
                    {
                        "name": "details",
                        "in": "query",
                        "required": False,
                        "schema": {"enum": ["1", "true", "0", "false"]},
                        "description": "1/true: the background work (thread state, stuck or "
                        "failed jobs) and committed writes found missing at open, as JSON; "
                        "503 when any of them is wrong (docs/serving.md)",
                    }
                ],
                "responses": {
                    "200": {
                        "description": "Serving (and, with details, healthy)",
                        "content": {
                            "text/plain": {"schema": {"type": "string", "const": "ok"}},
                            "application/json": {"schema": ref("Health")},
                        },
                    },
                    "503": {
                        "description": "With details: a failed or stuck background job, a "
                        "dead background thread, or a loss found at open",
                        "content": {"application/json": {"schema": ref("Health")}},
                    },
                },
            }
        },
        "/banks": {
            "get": {
                "operationId": "listBanks",
                "summary": "Every bank in the store",
                "responses": _responses(_json({"type": "array"}), names=False),
            }
        },
        "/banks/{bank}": {
            "delete": {
                "operationId": "deleteBank",
                "summary": "Delete a bank with all its memories and config",
                "parameters": [bank],
                "responses": _responses(_json(ref("Deleted"))),
            }
        },
        "/banks/{bank}/retain": {
            "post": {
                "operationId": "retain",
                "summary": "Store a memory; the bank is created by its first retain",
                "parameters": [bank],
                "requestBody": _body("RetainRequest"),
                "responses": _responses(_json(ref("RetainResponse")), body=True, conflict=True),
            }
        },
        "/banks/{bank}/conversation": {
            "post": {
                "operationId": "retainConversation",
                "summary": "Store a conversation, one memory per turn with the turns around it "
                "as context; the whole request is checked before anything is written",
                "parameters": [bank],
                "requestBody": _body("ConversationRequest"),
                "responses": _responses(_json(ref("ConversationResponse")), body=True),
            }
        },
        "/banks/{bank}/retain_many": {
            "post": {
                "operationId": "retain_many",
                "summary": "Store many memories in one transaction: all of them, or none",
                "parameters": [bank],
                "requestBody": _body("RetainManyRequest"),
                "responses": _responses(_json(ref("RetainManyResponse")), body=True, conflict=True),
            }
        },
        "/banks/{bank}/recall": {
            "post": {
                "operationId": "recall",
                "summary": "The memories that best match a query, within a token budget",
                "parameters": [bank],
                "requestBody": _body("RecallRequest"),
                "responses": _responses(_json(ref("RecallResponse")), body=True),
            }
        },
        "/banks/{bank}/reflect": {
            "post": {
                "operationId": "reflect",
                "summary": "The best memories, cited by id and dated, as one text block",
                "parameters": [bank],
                "requestBody": _body("ReflectRequest"),
                "responses": _responses(_json(ref("ReflectResponse")), body=True),
            }
        },
        "/banks/{bank}/config": {
            "get": {
                "operationId": "getConfig",
                "summary": "The bank's config",
                "parameters": [bank],
                "responses": _responses(_json(ref("Config"))),
            },
            "put": {
                "operationId": "putConfig",
                "summary": "Merge keys into the bank's config (null removes a key)",
                "parameters": [bank],
                "requestBody": _body("Config"),
                "responses": _responses(_json(ref("Config")), body=True),
            },
        },
        "/banks/{bank}/memories": {
            "get": {
                "operationId": "listMemories",
                "summary": "A page of the bank's memories",
                "parameters": [
                    bank,
                    *(_parameter(f, "query") for f in fields.fields_for("memories", "http")),
                ],
                "responses": _responses(_json({"type": "array", "items": ref("Memory")})),
            }
        },
        "/banks/{bank}/memories/{memory_id}": {
            "get": {
                "operationId": "getMemory",
                "summary": "One memory",
                "parameters": [bank, memory_id],
                "responses": _responses(_json(ref("Memory"))),
            },
            "delete": {
                "operationId": "forgetMemory",
                "summary": "Forget one live memory: to the bank's trash (restorable for its "
                "trash_days, 30 by default; trashed: true), or deleted when trash_days is 0",
                "parameters": [bank, memory_id],
                "responses": _responses(_json(ref("Deleted"))),
            },
            "patch": {
                "operationId": "updateMemory",
                "summary": "Change a live memory: new content or context makes a new version "
                "(a new id) that supersedes it; tags alone change it in place. Answers the "
                "memory as it is now",
                "parameters": [bank, memory_id],
                "requestBody": _body("UpdateRequest"),
                "responses": _responses(_json(ref("Memory")), body=True, conflict=True),
            },
        },
        "/banks/{bank}/memories/{memory_id}/history": {
            "get": {
                "operationId": "memoryHistory",
                "summary": "Every version of a memory, oldest first, each with its status",
                "parameters": [bank, memory_id],
                "responses": _responses(_json(ref("History"))),
            }
        },
        "/banks/{bank}/memories/{memory_id}/purge": {
            "post": {
                "operationId": "purgeMemory",
                "summary": "Delete a memory for good, in any state: from the store, its "
                "history and the bank's snapshot. Irreversible; no body",
                "parameters": [bank, memory_id],
                "responses": _responses(_json(ref("Deleted")), body=True),
            }
        },
        "/banks/{bank}/trash": {
            "get": {
                "operationId": "listTrash",
                "summary": "A page of the bank's trash, the last trashed first",
                "parameters": [
                    bank,
                    *(_parameter(f, "query") for f in fields.fields_for("trash", "http")),
                ],
                "responses": _responses(_json({"type": "array", "items": ref("Memory")})),
            }
        },
        "/banks/{bank}/trash/empty": {
            "post": {
                "operationId": "emptyTrash",
                "summary": "Delete the bank's trashed memories for good (all, or those trashed "
                "more than older_than_days ago); the body may be empty. Irreversible",
                "parameters": [bank],
                "requestBody": {
                    "required": False,
                    "content": {"application/json": {"schema": ref("EmptyTrashRequest")}},
                },
                "responses": _responses(_json(ref("Deleted")), body=True),
            }
        },
        "/banks/{bank}/trash/{memory_id}/restore": {
            "post": {
                "operationId": "restoreMemory",
                "summary": "A trashed memory is live again, same id; no body",
                "parameters": [bank, memory_id],
                "responses": _responses(_json(ref("Deleted")), body=True, conflict=True),
            }
        },
        "/banks/{bank}/stats": {
            "get": {
                "operationId": "bankStats",
                "summary": "Count, tags, oldest and newest memory of a bank",
                "parameters": [bank],
                "responses": _responses(_json(ref("Stats"))),
            }
        },
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "memwire",
            "version": __version__,
            "description": 'Durable memory for AI agents. Errors answer `{"error": reason}`. '
            "MCP (streamable HTTP) is served at /mcp and /mcp/{bank}.",
        },
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
        "paths": paths,
    }


def document() -> dict[str, Any]:
    """A fresh copy of the document (callers may mutate it)."""
    return copy.deepcopy(_document())
