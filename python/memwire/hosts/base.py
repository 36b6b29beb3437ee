"""What an agent host is, as data: one :class:`Host` per file of this package.

A host is described by what it does, not by code: where its config files live
(:class:`Paths`), how its hook entries and its MCP entry are written (:class:`HookFormat`,
:class:`McpFormat`), the names it gives memwire's events (``events``), which fields of its
stdin JSON memwire reads and how the host is recognised from them (:class:`PayloadFormat`),
what it expects on stdout (:class:`OutputFormat`) and what its transcript looks like
(:class:`TranscriptFormat`). ``memwire.connect`` and ``memwire.hooks`` hold the mechanics and
read these facts; neither names a host.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "EVENTS",
    "GENERIC_PAYLOAD",
    "GENERIC_TRANSCRIPT",
    "HOOK_STYLES",
    "MCP_STYLES",
    "OUTPUT_STYLES",
    "PART_KIND_KEY",
    "PART_TEXT_KEY",
    "PLAIN_OUTPUT",
    "TIMEOUT_UNITS",
    "TIMESTAMP_KEY",
    "Envelope",
    "HookFormat",
    "HookSpec",
    "Host",
    "McpFormat",
    "OutputFormat",
    "Paths",
    "PayloadFormat",
    "TranscriptFormat",
]

# memwire's own names for the lifecycle events (``memwire hook <event>``); every host maps its
# names onto these.
EVENTS = ("session-start", "prompt", "stop", "pre-compact", "session-end")
# "nested": event -> [{"matcher"?, "hooks": [{"type": "command", "command", ...}]}];
# "flat": event -> [{"command"}].
HOOK_STYLES = ("nested", "flat")
TIMEOUT_UNITS = ("s", "ms", "")  # "": the host takes no timeout
# "json": a named entry in an object of servers; "toml": a [<table>.memwire] table kept
# between memwire's markers.
MCP_STYLES = ("json", "toml")
# "additional-context": {"hookSpecificOutput": {"hookEventName", "additionalContext"}} JSON;
# "plain": the bare block.
OUTPUT_STYLES = ("additional-context", "plain")


@dataclass(frozen=True)
class HookSpec:
    """One hook entry: the host's event name, memwire's event, and a timeout in seconds."""

    host_event: str
    event: str
    timeout: int


@dataclass(frozen=True)
class Paths:
    """Where the host keeps its files."""

    dir_name: str  # under HOME, unless env_dir is set in the environment
    env_dir: str | None  # an environment variable that moves the host directory
    hooks_file: str  # relative to the host directory
    mcp_file: str  # relative to HOME when it starts with "~/", else to the host directory
    skills_dir: str  # relative to the host directory


@dataclass(frozen=True)
class HookFormat:
    """How hook entries are written into the hooks file."""

    table: str  # the top-level key holding event -> entries
    style: str  # one of HOOK_STYLES
    timeout_unit: str  # one of TIMEOUT_UNITS
    named: bool  # each entry carries "name": "memwire-<event>" (first key)
    file_defaults: Mapping[str, int | str]  # top-level keys the file must have (set if missing)
    specs: tuple[HookSpec, ...]  # what `memwire connect` wires, in this order


@dataclass(frozen=True)
class McpFormat:
    """How the MCP server entry is written."""

    style: str  # one of MCP_STYLES
    table: str  # the key (JSON) or table (TOML) holding the servers
    stdio_type: bool  # write "type": "stdio" in the entry
    # A variable the host expands to the project's directory in the entry's args, passed as
    # `memwire mcp --cwd ...` ("": the host starts MCP servers in the project's directory,
    # which is where `memwire mcp` looks for the project's bank).
    project_dir: str


@dataclass(frozen=True)
class PayloadFormat:
    """Which fields of the host's stdin JSON memwire reads, and how the host is recognised.

    Each field lists keys in preference order; ``"key[0]"`` means the first element of a list.
    Payloads are read with every host's keys (a host's first choice beats another host's
    fallback; :data:`GENERIC_PAYLOAD` comes last), because ``--host`` only names the output
    format and the payload must be understood before the host is known.
    """

    session: tuple[str, ...]
    cwd: tuple[str, ...]
    prompt: tuple[str, ...]
    transcript: tuple[str, ...]
    event: tuple[str, ...]
    # Recognition (when ``--host`` is not given): any of these keys present, or the event name
    # one of these, or (``detect_any_event``) any event name at all. Hosts are tried by
    # ascending ``detect_order``; the one recognised only by a generic signal goes last.
    detect_keys: tuple[str, ...]
    detect_events: tuple[str, ...]
    detect_any_event: bool
    detect_order: int


@dataclass(frozen=True)
class OutputFormat:
    """What the host expects on stdout."""

    style: str  # one of OUTPUT_STYLES
    silent: str  # the stdout when nothing is injected ("" or "{}")
    # memwire event -> the host's event name expected back with injected context; events
    # missing here inject nothing.
    context_events: Mapping[str, str]
    # memwire event -> a fixed stdout (the host takes no context there); memwire answers it at
    # once without recalling.
    fixed: Mapping[str, str]

    def render(self, event: str, block: str) -> str:
        """The stdout for ``event`` carrying ``block`` (the memories to inject, maybe "")."""
        if event in self.fixed:
            return self.fixed[event]
        if not block:
            return self.silent
        if self.style == "plain":
            return block
        name = self.context_events.get(event)
        if name is None:
            return self.silent
        return json.dumps(
            {"hookSpecificOutput": {"hookEventName": name, "additionalContext": block}},
            ensure_ascii=False,
        )


# No host at all (scripts, ``--host plain``, a payload nothing recognises): the bare block.
PLAIN_OUTPUT = OutputFormat(style="plain", silent="", context_events={}, fixed={})


@dataclass(frozen=True)
class Envelope:
    """A transcript entry that wraps its message: ``{kind_key: one of kinds, inner: {...}}``.

    With ``inner_kind`` set, an entry whose inner object is of another kind is not a message.
    """

    kinds: tuple[str, ...]
    inner: str
    inner_kind: str | None = None
    kind_key: str = "type"


@dataclass(frozen=True)
class TranscriptFormat:
    """What a host's transcript adds to the generic shape (:data:`GENERIC_TRANSCRIPT`).

    Transcripts are read with every host's rules at once, per entry, never by file name: the
    hooks cannot trust a path to say which host wrote it. Fields left empty add nothing.
    """

    envelopes: tuple[Envelope, ...] = ()
    skip_flags: tuple[str, ...] = ()  # an entry with any of these truthy is not a message
    role_keys: tuple[str, ...] = ()  # where the role is (the first key present wins)
    user_roles: tuple[str, ...] = ()  # lower-case
    assistant_roles: tuple[str, ...] = ()  # lower-case
    content_keys: tuple[str, ...] = ()  # a string, a part or a list of parts
    string_keys: tuple[str, ...] = ()  # a plain string body
    text_types: tuple[str, ...] = ()  # part types that are the conversation's own text
    document_keys: tuple[str, ...] = ()  # a whole-file JSON object's list of messages
    wrappers: tuple[str, ...] = ()  # tags the host wraps around injected text (dropped)
    skip_prefixes: tuple[str, ...] = ()  # texts starting so are host boilerplate (dropped)


# Keys any host may use beyond its own (camelCase spellings, older payloads).
GENERIC_PAYLOAD = PayloadFormat(
    session=("sessionId",),
    cwd=(),
    prompt=("user_prompt", "message"),
    transcript=("transcriptPath",),
    event=(),
    detect_keys=(),
    detect_events=(),
    detect_any_event=False,
    detect_order=0,
)

# Any JSON / JSON Lines whose messages carry a role and text; every host's transcript format
# adds to this.
GENERIC_TRANSCRIPT = TranscriptFormat(
    role_keys=("role", "type"),
    user_roles=("user", "human"),
    assistant_roles=("assistant", "ai", "agent", "bot"),
    content_keys=("content",),
    string_keys=("text", "message"),
    text_types=("text",),
    document_keys=("history", "conversation", "turns", "items"),
)
# The keys of a message part and of an entry's time; the same for every host.
PART_KIND_KEY = "type"
PART_TEXT_KEY = "text"
TIMESTAMP_KEY = "timestamp"


@dataclass(frozen=True)
class Host:
    """One agent host; the module ``memwire.hosts.<name>`` defines it as ``HOST``."""

    name: str  # the module's name, `memwire connect <name>`, `--host <name>`
    label: str  # what people call it
    docs: tuple[str, ...]  # the documentation each format was checked against
    paths: Paths
    hooks: HookFormat
    mcp: McpFormat
    # Every name the host gives memwire's events (the wired ones and the others it may send).
    events: Mapping[str, str]
    payload: PayloadFormat
    output: OutputFormat
    transcript: TranscriptFormat
    # What the user does after `memwire connect` for the host to pick the entries up.
    next_steps: tuple[str, ...]

    def root(self, home: Path) -> Path:
        if self.paths.env_dir:
            value = os.environ.get(self.paths.env_dir, "").strip()
            if value:
                return Path(value).expanduser()
        return home / self.paths.dir_name

    def hooks_path(self, home: Path) -> Path:
        return self.root(home) / self.paths.hooks_file

    def mcp_path(self, home: Path) -> Path:
        if self.paths.mcp_file.startswith("~/"):
            return home / self.paths.mcp_file[2:]
        return self.root(home) / self.paths.mcp_file

    def skill_path(self, home: Path) -> Path:
        return self.root(home) / self.paths.skills_dir / "memwire" / "SKILL.md"

    def present(self, home: Path) -> bool:
        """Whether the host looks installed under ``home``."""
        return self.root(home).is_dir() or (
            self.paths.mcp_file.startswith("~/") and self.mcp_path(home).is_file()
        )
