"""One memory-wire client session: the requests, and how to compare two servers' answers.

``record_peer.py`` plays :data:`STEPS` against the real memory-wire binary and stores what it
answered (fixtures/memory_wire_0.7.0.json); ``test_compat_http.py`` plays them against
memwire's ``/mw`` routes and compares. Ids differ between the two servers (UUIDs there,
``mem_...`` here), so each retain's id is named (``save``) and answers are compared with every
known id replaced by its name; timestamps become ``<time>`` and scores ``<score>``.

``check`` says what must agree: ``exact`` (status, content type, headers listed, body),
``shape`` (status, content type and the body's JSON shape: a bare string stays a string, an
object keeps its keys, but not the text itself, e.g. reflect's wording or a budget cut),
``set`` (as exact, the array's order aside), ``status`` (status and content type: error
reasons are worded differently) or ``code`` (the status alone). The body of a text answer is
compared in ``exact`` only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

JSON = "application/json"
TEXT = "text/plain"


@dataclass(frozen=True)
class Step:
    method: str
    path: str
    body: object = None
    raw: str | None = None
    """A body sent as is (bad JSON), instead of ``body``."""
    content_type: str = JSON
    save: str | None = None
    """Name the ``id`` this retain answers."""
    check: str = "exact"
    headers: tuple[str, ...] = ()
    """Response headers that must agree."""
    note: str = ""


def _retain(bank: str, save: str | None = None, **body: object) -> Step:
    return Step("POST", f"/banks/{bank}/retain", body, save=save)


STEPS: tuple[Step, ...] = (
    Step("GET", "/health", note="plain ok"),
    _retain("b1", "alpha", content="Alpha beta gamma", context="from a chat", tags=["Foo", "bar"]),
    Step(
        "POST",
        "/banks/b1/retain",
        {"content": "Alpha beta gamma"},
        note="identical content: the same id, deduplicated",
        save="alpha",
    ),
    _retain("b1", "doc1", content="Delta epsilon", document_id="d1"),
    Step(
        "POST",
        "/banks/b1/retain",
        {"content": "Delta epsilon two", "document_id": "d1", "update_mode": "append"},
        check="status",
        note="append conflict: 409",
    ),
    _retain("b1", "doc1b", content="Delta epsilon three", document_id="d1", update_mode="replace"),
    Step("POST", "/banks/b1/recall", {"query": "alpha"}),
    Step("POST", "/banks/b1/recall", {"query": "alpha", "format": "full"}),
    Step("POST", "/banks/b1/recall", {"query": "zzzz"}, note="nothing matches: []"),
    Step("POST", "/banks/b1/recall", {"query": ""}, note="blank query: []"),
    Step("POST", "/banks/b1/recall", {"query": "alpha", "tags": ["FOO"]}, note="tags: any case"),
    Step("POST", "/banks/b1/recall", {"query": "alpha", "exclude_tags": ["Foo"]}),
    Step("POST", "/banks/b1/recall", {"query": "alpha delta"}, check="set"),
    Step("POST", "/banks/b1/recall", {"query": "alpha", "budget": 1}, check="shape"),
    Step("POST", "/banks/b1/recall", {"query": "alpha", "budget": 0}, note="zero budget: []"),
    Step(
        "POST",
        "/banks/b1/recall",
        {"query": "alpha", "limit": 1, "bogus": 2},
        note="unknown fields are ignored",
    ),
    Step("POST", "/banks/nobank/recall", {"query": "alpha"}),
    Step("POST", "/banks/b1/recall", {}, check="status", note="missing query: 422"),
    Step("POST", "/banks/b1/recall", raw="notjson", check="status", note="bad JSON: 400"),
    Step(
        "POST",
        "/banks/b1/recall",
        raw='{"query":"x"}',
        content_type=TEXT,
        check="status",
        note="not JSON: 415",
    ),
    Step("POST", "/banks/b1/reflect", {"query": "alpha"}, check="shape", note="a bare string"),
    Step("POST", "/banks/b1/reflect", {"query": "zzzz"}, check="shape"),
    Step("POST", "/banks/b1/reflect", {}, check="status"),
    Step("POST", "/banks/b1/retain", {"content": ""}, check="status", note="blank: 400"),
    Step("POST", "/banks/b1/retain", {"content": "   "}, check="status"),
    Step("POST", "/banks/b1/retain", {"content": "x y", "tags": "a"}, check="status"),
    Step("POST", "/banks/b1/retain", [], check="status"),
    Step(
        "POST",
        "/banks/b1/retain",
        {"content": "Omega2", "update_mode": "bogus", "document_id": "q"},
        check="status",
    ),
    _retain("b1", "nulls", content="ok then", context=None, tags=None),
    Step("GET", "/banks/b1/stats", check="exact"),
    Step("GET", "/banks/nope/stats", note="unknown bank: zeros"),
    Step("GET", "/banks/b1/config"),
    Step("GET", "/banks/nope/config", check="status", note="unknown bank: 404"),
    Step("PUT", "/banks/nope/config", {"retainTags": ["X"]}, check="status"),
    Step("PUT", "/banks/b1/config", {"recallMaxTokens": 100}),
    Step("PUT", "/banks/b1/config", {"retainTags": ["Team", "A b"]}, note="PUT replaces"),
    Step("GET", "/banks/b1/config"),
    _retain("b1", "omega", content="Omega psi chi", tags=["Local"]),
    Step("POST", "/banks/b1/recall", {"query": "omega", "tags": ["team"]}, note="retainTags act"),
    Step("POST", "/banks/b1/recall", {"query": "omega", "tags": ["a b"]}),
    Step("POST", "/banks/b1/recall", {"query": "omega", "tags": ["local"]}),
    Step("PUT", "/banks/b1/config", {"recallMaxTokens": 2}),
    Step("POST", "/banks/b1/recall", {"query": "omega"}, check="shape", note="recallMaxTokens"),
    Step("PUT", "/banks/b1/config", {}),
    Step("PUT", "/banks/b1/config", [1], check="status", note="not an object: 400"),
    Step("GET", "/banks/b1/memories", headers=("x-total-count",), note="oldest first"),
    Step("GET", "/banks/b1/memories?limit=1&offset=1", headers=("x-total-count",)),
    Step("GET", "/banks/b1/memories?limit=0", headers=("x-total-count",)),
    Step("GET", "/banks/b1/memories?limit=abc", check="status"),
    Step("GET", "/banks/b1/memories?offset=-1", check="status"),
    Step("GET", "/banks/b1/memories?bogus=1", headers=("x-total-count",)),
    Step("GET", "/banks/nobank/memories", headers=("x-total-count",)),
    Step("GET", "/banks/b1/memories/{alpha}"),
    Step("GET", "/banks/b1/memories/nope", check="status"),
    Step("GET", "/banks/b2/memories/{alpha}", check="status", note="another bank's memory"),
    Step("DELETE", "/banks/b1/memories/{alpha}"),
    Step("DELETE", "/banks/b1/memories/{alpha}", note="a repeat: false, not 404"),
    Step("DELETE", "/banks/zz/memories/nope"),
    Step("GET", "/banks/b1/memories/{alpha}", check="status"),
    Step("GET", "/banks/b1/stats"),
    Step("GET", "/banks/b1/retain", check="code", note="wrong method: 405"),
)


@dataclass
class Answer:
    status: int
    content_type: str
    headers: dict[str, str]
    text: str


@dataclass
class Names:
    """Ids answered by one server, by the name their retain was given."""

    ids: dict[str, str] = field(default_factory=dict)

    def path(self, step: Step) -> str:
        return re.sub(r"\{(\w+)\}", lambda m: self.ids[m.group(1)], step.path)

    def learn(self, step: Step, answer: Answer) -> None:
        if step.save is not None and answer.status == 200:
            self.ids.setdefault(step.save, json.loads(answer.text)["id"])


TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def _normal(value: Any, names: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        if value in names:
            return "<" + names[value] + ">"
        return "<time>" if TIME.match(value) else value
    if isinstance(value, float):
        return "<score>"
    if isinstance(value, list):
        return [_normal(v, names) for v in value]
    if isinstance(value, dict):
        return {k: _normal(v, names) for k, v in value.items()}
    return value


def _shape(value: Any) -> Any:
    if isinstance(value, list):
        return [_shape(v) for v in value]
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    return type(value).__name__


def normalise(step: Step, answer: Answer, names: Names) -> dict[str, Any]:
    """What of ``answer`` must agree between the two servers, in comparable form."""
    kind = answer.content_type.split(";", 1)[0].strip()
    if step.check == "code":
        return {"status": answer.status}
    out: dict[str, Any] = {"status": answer.status, "type": kind or None}
    if step.check == "status":
        return out
    out["headers"] = {h: answer.headers.get(h) for h in step.headers}
    if kind != JSON:
        out["text"] = answer.text
        return out
    by_id = {v: k for k, v in names.ids.items()}
    body = _normal(json.loads(answer.text), by_id)
    if step.check == "shape":
        body = _shape(body)
    elif step.check == "set" and isinstance(body, list):
        body = sorted(body, key=json.dumps)
    out["body"] = body
    return out


Send = Callable[[Step, str], Answer]


def play(send: Send) -> list[dict[str, Any]]:
    """Every step sent with ``send(step, path)``, normalised, in order."""
    names = Names()
    recorded = []
    for step in STEPS:
        answer = send(step, names.path(step))
        names.learn(step, answer)
        recorded.append(
            {
                "request": {"method": step.method, "path": step.path, "body": step.body}
                | ({"raw": step.raw} if step.raw is not None else {}),
                "note": step.note,
                "answer": normalise(step, answer, names),
            }
        )
    return recorded
