"""The field table (memwire.server.fields) against the Memory layer and every door's schema.

Each door is read the way its clients read it: the OpenAPI document's properties and
parameters, each MCP tool's inputSchema, the CLI's argparse actions. Each is compared to the
table's raw attributes, and the table's limits to the constants and checks of the Memory layer.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import re
from pathlib import Path
from typing import Any

import pytest
from memwire import _text, config
from memwire.cli import build_parser
from memwire.errors import InvalidInputError, NotFoundError
from memwire.memory import MAX_LIMIT, Memory, conversation
from memwire.memory import api as memory_api
from memwire.memory import items as memory_items
from memwire.server import fields, ops
from memwire.server.fields import BANK, FIELDS, Field, field, fields_for
from memwire.server.openapi import document

DOCS = Path(__file__).resolve().parents[2] / "docs" / "serving.md"


def test_limits_are_the_memory_layers_own() -> None:
    assert field("limit").maximum == MAX_LIMIT
    assert field("page_limit").maximum == memory_api.MAX_LIST_LIMIT
    assert field("batch").maximum == memory_api.MAX_REEMBED_BATCH
    assert field("id").max_length == memory_items.MAX_ID_CHARS
    assert field("update_mode").choices == memory_items.UPDATE_MODES
    assert field("budget").maximum == config.MAX_RECALL_TOKENS
    assert field("query").max_length == _text.MAX_QUERY_CHARS
    assert field("content").max_length == _text.MAX_CONTENT_CHARS
    assert field("context").max_length == _text.MAX_CONTEXT_CHARS
    assert field("document_id").max_length == _text.MAX_DOCUMENT_ID_CHARS
    assert BANK.max_length == _text.MAX_BANK_CHARS
    assert field("turns").max_count == conversation.MAX_TURNS
    assert field("before").maximum == field("after").maximum == conversation.MAX_WINDOW
    assert set(fields.TURN_SCHEMA["properties"]) == conversation.TURN_KEYS  # type: ignore[arg-type]
    for key in ("tags", "filter_tags", "exclude_tags"):
        assert field(key).max_items == _text.MAX_TAGS
        assert field(key).item_max_chars == _text.MAX_TAG_CHARS


def test_defaults_are_the_memory_apis() -> None:
    """Where a Memory method has a default for a field, the table's is the same."""
    methods = {
        "retain": Memory.retain,
        "recall": Memory.recall,
        "reflect": Memory.reflect,
        "memories": Memory.memories,
        "reembed": Memory.reembed,
        "retain_conversation": Memory.retain_conversation,
    }
    checked = 0
    for operation, method in methods.items():
        params = inspect.signature(method).parameters
        for f in fields_for(operation):
            if f.name in params and params[f.name].default is not inspect.Parameter.empty:
                default = params[f.name].default
                if f.default is None:  # absent: Memory's "nothing" (None, or no tags)
                    assert default in (None, ()), (operation, f.key)
                else:
                    assert f.default == default, (operation, f.key)
                checked += 1
    assert checked >= 8
    assert inspect.signature(Memory.recall).parameters["bank"].default == BANK.default


def test_integer_ranges_are_enforced_where_the_memory_api_enforces_them(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db") as memory:
        memory.retain("one memory", bank="b")
        calls = {
            "limit": lambda n: memory.recall("memory", bank="b", limit=n),
            "page_limit": lambda n: memory.memories(bank="b", limit=n),
            "offset": lambda n: memory.memories(bank="b", offset=n),
            "batch": lambda n: memory.reembed("nobody", batch=n),
        }
        for key, run in calls.items():
            f = field(key)
            low, high = f.minimum, f.maximum
            assert isinstance(low, int) and isinstance(high, int)
            for bad in (low - 1, high + 1):
                with pytest.raises(InvalidInputError, match=f"between {low} and {high}"):
                    run(bad)
            for good in (low, high):
                # reembed of a bank that is not there: NotFoundError, past the check
                with contextlib.suppress(NotFoundError):
                    run(good)
        budget = field("budget")
        assert isinstance(budget.maximum, int)
        memory.recall("memory", bank="b", budget=budget.maximum)
        with pytest.raises(InvalidInputError, match="budget"):
            memory.recall("memory", bank="b", budget=budget.maximum + 1)
        # min_score: the table's minimum is check_min_score's
        floor = field("min_score").minimum
        assert floor == 0
        memory.recall("memory", bank="b", min_score=floor)
        with pytest.raises(InvalidInputError, match="min_score"):
            memory.recall("memory", bank="b", min_score=-1e-9)
        # the id's length
        id_chars = field("id").max_length
        assert isinstance(id_chars, int)
        with pytest.raises(NotFoundError):
            memory.get("m" * id_chars)
        with pytest.raises(InvalidInputError, match="too long"):
            memory.get("m" * (id_chars + 1))


@pytest.mark.parametrize("f", [f for f in FIELDS if f.kind == "integer"], ids=lambda f: f.key)
def test_ops_checks_integers_as_the_table_says(f: Field) -> None:
    low, high = f.minimum, f.maximum
    assert isinstance(low, int) and isinstance(high, int)
    check = ops.check_field
    assert check({f.name: high}, f) == high
    assert check({}, f) == f.default
    for bad in (low - 1, high + 1):
        with pytest.raises(InvalidInputError, match=f"{f.name} must be between {low} and {high}"):
            check({f.name: bad}, f)
    with pytest.raises(InvalidInputError, match=f"{f.name} must be an integer"):
        check({f.name: "3"}, f)


def test_ops_checks_choices_and_numbers() -> None:
    mode = field("update_mode")
    assert ops.check_field({}, mode) == "replace"
    with pytest.raises(InvalidInputError, match="update_mode must be one of 'replace', 'append'"):
        ops.check_field({"update_mode": "merge"}, mode)
    score = field("min_score")
    assert ops.check_field({"min_score": 0.01}, score) == 0.01
    assert ops.check_field({"min_score": None}, score) is None
    for bad in ("0.1", True, [0.1]):
        with pytest.raises(InvalidInputError, match="min_score must be a number"):
            ops.check_field({"min_score": bad}, score)
    newest = field("prefer_newest")
    assert ops.check_field({}, newest) is None
    assert ops.check_field({"prefer_newest": False}, newest) is False
    assert ops.check_field({"prefer_newest": True}, newest) is True
    for bad in ("true", 1, 0, [True]):
        with pytest.raises(InvalidInputError, match="prefer_newest must be true or false"):
            ops.check_field({"prefer_newest": bad}, newest)


def test_pack_fields_range_is_the_memory_apis(tmp_path: Path) -> None:
    """near_duplicate's table range [0, 1] is what Memory.recall accepts."""
    near = field("near_duplicate")
    assert (near.minimum, near.maximum) == (0, 1)
    with Memory(tmp_path / "m.db") as memory:
        memory.retain("one memory", bank="b")
        for good in (near.minimum, near.maximum):
            memory.recall("memory", bank="b", near_duplicate=good)
        for bad in (-1e-9, 1 + 1e-9):
            with pytest.raises(InvalidInputError, match="near_duplicate"):
                memory.recall("memory", bank="b", near_duplicate=bad)
        with pytest.raises(InvalidInputError, match="prefer_newest"):
            memory.recall("memory", bank="b", prefer_newest=1)  # type: ignore[arg-type]


# -- the doors ---------------------------------------------------------------------------------


def _types(schema: dict[str, Any]) -> set[str]:
    kind = schema["type"]
    return set(kind) if isinstance(kind, list) else {kind}


def assert_schema_matches(schema: dict[str, Any], f: Field, *, nullable: bool) -> None:
    """A JSON Schema property says what the table says, attribute by attribute."""
    where = f.key
    expected = {
        "string": "string",
        "integer": "integer",
        "number": "number",
        "boolean": "boolean",
        "choice": "string",
        "strings": "array",
        "turns": "array",
        "items": "array",
    }[f.kind]
    assert _types(schema) == ({expected, "null"} if nullable else {expected}), where
    assert schema.get("minimum") == f.minimum, where
    assert schema.get("maximum") == f.maximum, where
    assert schema.get("minLength") == f.min_chars, where
    assert schema.get("maxLength") == f.max_length, where
    assert schema.get("maxItems") == f.max_count, where
    if f.kind == "strings":
        assert schema["items"] == {"type": "string", "maxLength": f.item_max_length}, where
    if f.kind == "turns":
        assert schema["items"] == fields.TURN_SCHEMA, where
    if f.kind == "items":  # a string, or an object of retain's fields (each as the table says)
        text, obj = schema["items"]["anyOf"]
        assert text == {"type": "string", "minLength": 1}, where
        taken = fields_for("retain_many_item")
        assert list(obj["properties"]) == [t.name for t in taken], where
        assert obj["required"] == [t.name for t in taken if t.required], where
        assert obj["additionalProperties"] is False, where
        for t in taken:
            assert_schema_matches(obj["properties"][t.name], t, nullable=True)
    if f.kind == "choice":
        enum = [v for v in schema["enum"] if v is not None]
        assert enum == list(f.choices or ()), where
        assert (None in schema["enum"]) is nullable, where
    else:
        assert "enum" not in schema, where
    assert schema.get("default") == f.default, where
    assert schema["description"] == fields.describe(f), where


HTTP_BODIES = {
    "retain": "RetainRequest",
    "retain_conversation": "ConversationRequest",
    "retain_many": "RetainManyRequest",
    "recall": "RecallRequest",
    "reflect": "ReflectRequest",
    "empty_trash": "EmptyTrashRequest",
}


@pytest.mark.parametrize("operation", sorted(HTTP_BODIES))
def test_openapi_request_bodies_agree_with_the_table(operation: str) -> None:
    schema = document()["components"]["schemas"][HTTP_BODIES[operation]]
    taken = fields_for(operation, "http")
    assert list(schema["properties"]) == [f.name for f in taken]
    assert schema["required"] == [f.name for f in taken if f.required]
    assert schema["additionalProperties"] is False  # ops.read refuses any other field
    for f in taken:
        assert_schema_matches(schema["properties"][f.name], f, nullable=not f.required)


def test_openapi_parameters_agree_with_the_table() -> None:
    paths = document()["paths"]
    listed = paths["/banks/{bank}/memories"]["get"]["parameters"]
    by_name = {p["name"]: p for p in listed}
    assert set(by_name) == {"bank"} | {f.name for f in fields_for("memories", "http")}
    for f in fields_for("memories", "http"):
        param = by_name[f.name]
        assert param["in"] == "query" and param["required"] is False
        assert_schema_matches(
            {**param["schema"], "description": param["description"]}, f, nullable=False
        )
    (memory_id,) = fields_for("get", "http")
    for path, item in paths.items():
        for operation in item.values():
            for param in operation.get("parameters", []):
                if param["name"] == "bank":
                    assert param["schema"] == {
                        "type": "string",
                        "minLength": BANK.min_chars,
                        "maxLength": BANK.max_length,
                    }, path
                if param["name"] == "memory_id":
                    assert param["schema"]["maxLength"] == memory_id.max_length, path


def test_openapi_documents_the_conflict_of_retain() -> None:
    responses = document()["paths"]["/banks/{bank}/retain"]["post"]["responses"]
    assert "409" in responses
    assert responses["409"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"
    }


def test_mcp_input_schemas_agree_with_the_table() -> None:
    pytest.importorskip("mcp")
    from memwire.server.mcp_server import SPECS, TOOLS

    assert [t.name for t in TOOLS] == [s.name for s in SPECS]
    for spec, tool in zip(SPECS, TOOLS, strict=True):
        assert "mcp" in fields.OPERATIONS[spec.operation], spec.name
        schema = tool.input_schema
        taken = fields_for(spec.operation, "mcp")
        assert list(schema["properties"]) == [*(f.name for f in taken), "bank"], spec.name
        assert schema["required"] == [f.name for f in taken if f.required], spec.name
        assert schema["additionalProperties"] is False
        for f in taken:
            assert_schema_matches(schema["properties"][f.name], f, nullable=False)
        bank = schema["properties"]["bank"]
        assert bank["type"] == "string" and bank["maxLength"] == BANK.max_length
    # recall's answer shape is fixed to full hits over MCP
    recall = next(t for t in TOOLS if t.name == "memory_recall")
    assert "format" not in recall.input_schema["properties"]
    assert "min_score" in recall.input_schema["properties"]


CLI_COMMANDS = {
    "retain": "retain",
    "retain-conversation": "retain_conversation",
    "recall": "recall",
    "reflect": "reflect",
    "get": "get",
    "forget": "forget",
    "memories": "memories",
    "reembed": "reembed",
    "update": "update",
    "history": "history",
    "purge": "purge",
}
# Options of those commands that are not request fields.
NOT_FIELDS = {"help", "bank", "db", "json", "no_progress", "embedder", "yes", "no_tags"}


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found: argparse.ArgumentParser = action.choices[name]
            return found
    raise AssertionError(f"no command {name}")


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("command", sorted(CLI_COMMANDS))
def test_cli_options_agree_with_the_table(command: str) -> None:
    operation = CLI_COMMANDS[command]
    assert "cli" in fields.OPERATIONS[operation]
    sub = _subparser(build_parser(), command)
    actions = {a.dest: a for a in sub._actions}
    taken = fields_for(operation, "cli")
    assert set(actions) - NOT_FIELDS == {f.name for f in taken}
    shown = _flat(sub.format_help())
    for f in taken:
        action = actions[f.name]
        if f.required:
            assert action.option_strings == [], f.key  # a positional argument
            continue
        assert tuple(action.option_strings) == fields.cli_flags(f), f.key
        assert action.default == f.default, f.key
        if f.kind == "boolean":  # --flag / --no-flag, and neither leaves it to the bank
            assert isinstance(action, argparse.BooleanOptionalAction), f.key
            assert len(fields.cli_flags(f)) == 2 * len(f.flags), f.key
        assert action.type is {"integer": int, "number": float}.get(f.kind), f.key
        if f.kind == "strings":
            assert isinstance(action, argparse._AppendAction), f.key
        if f.kind == "choice":
            assert action.choices is not None and list(action.choices) == list(f.choices or ())
            assert f.choices and all(c in action.choices for c in f.choices)
            assert "nonsense" not in action.choices
        assert _flat(fields.describe(f)) in shown, f.key


def test_cli_bank_option_is_the_tables() -> None:
    sub = _subparser(build_parser(), "recall")
    (bank,) = [a for a in sub._actions if a.dest == "bank"]
    assert tuple(bank.option_strings) == BANK.flags
    # No parse-time default: the bank rule fills it in after parsing (memwire.project), and
    # outside any repository with no MEMWIRE_BANK it gives the table's default.
    assert bank.default is None


def test_cli_bank_rule_ends_at_the_tables_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memwire.cli._common import resolve_project_bank

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEMWIRE_BANK", raising=False)
    args = build_parser().parse_args(["recall", "q"])
    resolve_project_bank(args)
    assert args.bank == BANK.default


def test_every_field_has_an_operation_and_a_door() -> None:
    keys = [f.key for f in FIELDS]
    assert len(keys) == len(set(keys))
    for f in FIELDS:
        assert f.operations and f.doors, f.key
        for operation in f.operations:
            if not fields.OPERATIONS[operation]:  # a shape inside another field (an item)
                continue
            assert set(f.doors) <= set(fields.OPERATIONS[operation]), f.key
        assert f.help and not f.help.endswith("."), f.key
    # two fields of one operation never share a wire name
    for operation in fields.OPERATIONS:
        names = [f.name for f in fields_for(operation)]
        assert len(names) == len(set(names)), operation
    with pytest.raises(KeyError):
        fields_for("nonsense")


def test_the_parser_does_not_load_the_memory_layer() -> None:
    """Building the CLI parser reads the table without importing memwire.memory (hooks run
    the CLI on every prompt); the deferred limits load on --help or a value check."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from memwire.cli import build_parser\n"
        "build_parser().parse_args(['recall', 'x', '--limit', '3'])\n"
        "print('memwire.memory' in sys.modules, 'numpy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"


def test_docs_show_the_table() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert fields.markdown_table() in text
    assert re.search(r"`min_score`", text)


def test_openapi_update_body_is_the_tables_without_the_path_id() -> None:
    schema = document()["components"]["schemas"]["UpdateRequest"]
    taken = [f for f in fields_for("update", "http") if f.name != "id"]
    assert list(schema["properties"]) == [f.name for f in taken] == ["content", "context", "tags"]
    assert schema["required"] == [] and schema["additionalProperties"] is False
    for f in taken:
        assert_schema_matches(schema["properties"][f.name], f, nullable=True)
    trash = document()["paths"]["/banks/{bank}/trash"]["get"]["parameters"]
    assert [p["name"] for p in trash] == ["bank", "limit", "offset"]
