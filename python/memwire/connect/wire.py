"""Wire memwire into a host's config, report what is wired, and unwire it.

Rules:

- An entry is *ours* when its command runs ``memwire hook`` (hooks) or ``memwire mcp`` (the MCP
  server named ``memwire``); a TOML MCP table is ours when it sits between memwire's markers.
  Only our entries are ever changed or removed; a foreign ``memwire`` MCP entry is reported and
  left alone.
- Every file is parsed strictly before anything is written; when one of a host's files does
  not parse, nothing of that host is written.
- A file is written only when its content changes (so a second run writes nothing), after a
  timestamped backup beside it, by an atomic replace.

What each host's files are and look like comes from :mod:`memwire.hosts`; nothing here names a
host.
"""

from __future__ import annotations

import contextlib
import copy
import re
import shlex
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memwire.connect import _files
from memwire.connect._files import Malformed
from memwire.hosts import HOSTS, Host
from memwire.hosts.base import HookSpec

__all__ = [
    "HostReport",
    "base_command",
    "connect_host",
    "inspect_host",
    "pin_args",
    "skill_text",
]

MCP_NAME = "memwire"
_HOOK_RE = re.compile(r"""(?:^|[\s/\\"'])memwire(?:\.exe)?["']?\s+hook\s+([a-z-]+)""")
_HOOK_MOD_RE = re.compile(r"""-m\s+memwire\s+hook\s+([a-z-]+)""")


@dataclass
class HostReport:
    host: str
    label: str
    present: bool = False
    state: str = "absent"  # absent | present | partial | wired
    hooks: dict[str, bool] = field(default_factory=dict)
    mcp: str = "missing"  # missing | wired | foreign
    skill: bool = False
    files: list[str] = field(default_factory=list)
    backups: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)  # files deleted (the skill)
    next_steps: list[str] = field(default_factory=list)
    error: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "label": self.label,
            "present": self.present,
            "state": self.state,
            "hooks": self.hooks,
            "mcp": self.mcp,
            "skill": self.skill,
            "changed": self.changed,
            "removed": self.removed,
            "backups": self.backups,
            "next_steps": self.next_steps,
            "error": self.error,
        }


def base_command() -> list[str]:
    """How hosts should start memwire: the ``memwire`` executable found on PATH, else this
    interpreter with ``-m memwire`` (both absolute, so GUI hosts with a short PATH find it)."""
    found = shutil.which("memwire")
    if found:
        return [str(Path(found).resolve())]
    return [sys.executable, "-m", "memwire"]


def _shell(parts: list[str]) -> str:
    return " ".join(shlex.quote(p) for p in parts)


def hook_command(host: Host, event: str, base: list[str], pins: Sequence[str] = ()) -> str:
    return _shell([*base, "hook", event, "--host", host.name, *pins])


def _our_event(command: object) -> str | None:
    if not isinstance(command, str):
        return None
    match = _HOOK_RE.search(command) or _HOOK_MOD_RE.search(command)
    return match.group(1) if match else None


def _is_our_mcp(entry: object) -> bool:
    if not isinstance(entry, dict):
        return False
    command = entry.get("command")
    args = entry.get("args") or []
    if not isinstance(command, str) or not isinstance(args, list):
        return False
    name = Path(command).name.lower()
    if name in ("memwire", "memwire.exe"):
        return bool(args) and args[0] == "mcp"
    return args[:3] == ["-m", "memwire", "mcp"]


def mcp_entry(host: Host, base: list[str], pins: Sequence[str] = ()) -> dict[str, Any]:
    """The MCP server entry: ``memwire mcp`` with the same pins as the hooks, so a model's
    ``memory_retain`` lands in the store and bank the hooks recall from. Unpinned, the bank
    is the project's (the server's working directory, or the host's variable for it)."""
    entry: dict[str, Any] = {"type": "stdio"} if host.mcp.stdio_type else {}
    entry["command"] = base[0]
    cwd = ["--cwd", host.mcp.project_dir] if host.mcp.project_dir else []
    entry["args"] = [*base[1:], "mcp", *pins, *cwd]
    return entry


def pin_args(bank: str | None = None, db: str | None = None) -> list[str]:
    """What ``connect --bank/--db`` pins into every hook command and the MCP entry."""
    pins: list[str] = []
    if bank is not None and bank.strip():
        pins += ["--bank", bank.strip()]
    if db is not None and db.strip():
        pins += ["--db", str(Path(db).expanduser().resolve()) if db != ":memory:" else db]
    return pins


def skill_path() -> Path:
    """The skill file shipped inside the package (maturin packages every file under
    python/memwire, so it is in every wheel and the sdist)."""
    import memwire

    return Path(memwire.__file__).resolve().parent / "skill" / "SKILL.md"


def skill_text() -> str:
    return skill_path().read_text(encoding="utf-8")


# -- hooks -------------------------------------------------------------------------------------


def _hook_item(
    host: Host, spec: HookSpec, base: list[str], pins: Sequence[str] = ()
) -> dict[str, Any]:
    command = hook_command(host, spec.event, base, pins)
    if host.hooks.style == "flat":
        return {"command": command}
    item: dict[str, Any] = {"type": "command", "command": command}
    if host.hooks.named:
        item = {"name": f"memwire-{spec.event}", **item}
    if host.hooks.timeout_unit == "s":
        item["timeout"] = spec.timeout
    elif host.hooks.timeout_unit == "ms":
        item["timeout"] = spec.timeout * 1000
    return item


def _entries_of(host: Host, groups: object) -> list[dict[str, Any]]:
    """The hook items under one event (flattening matcher groups)."""
    out: list[dict[str, Any]] = []
    if not isinstance(groups, list):
        return out
    for group in groups:
        if not isinstance(group, dict):
            continue
        if host.hooks.style == "flat":
            out.append(group)
        elif isinstance(group.get("hooks"), list):
            out.extend(h for h in group["hooks"] if isinstance(h, dict))
    return out


def _hooks_table(host: Host, config: dict[str, Any]) -> dict[str, Any] | None:
    table = config.get(host.hooks.table)
    return table if isinstance(table, dict) else None


def hooks_status(host: Host, config: dict[str, Any] | None) -> dict[str, bool]:
    table = _hooks_table(host, config or {}) or {}
    status = {}
    for spec in host.hooks.specs:
        status[spec.host_event] = any(
            _our_event(item.get("command")) == spec.event
            for item in _entries_of(host, table.get(spec.host_event))
        )
    return status


def _remove_ours(host: Host, table: dict[str, Any], event_key: str) -> None:
    groups = table.get(event_key)
    if not isinstance(groups, list):
        return
    kept: list[Any] = []
    for group in groups:
        if host.hooks.style == "flat":
            if isinstance(group, dict) and _our_event(group.get("command")):
                continue
            kept.append(group)
            continue
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            inner = [
                h
                for h in group["hooks"]
                if not (isinstance(h, dict) and _our_event(h.get("command")))
            ]
            if not inner and group["hooks"]:
                continue  # the group held only our hooks
            if len(inner) != len(group["hooks"]):
                group = {**group, "hooks": inner}
        kept.append(group)
    if kept:
        table[event_key] = kept
    else:
        del table[event_key]


def apply_hooks(
    host: Host, config: dict[str, Any], base: list[str], uninstall: bool, pins: Sequence[str] = ()
) -> dict[str, Any]:
    """A copy of ``config`` with our hook entries set (or removed)."""
    new = copy.deepcopy(config)
    for name, value in host.hooks.file_defaults.items():
        new.setdefault(name, value)
    key = host.hooks.table
    table = _hooks_table(host, new)
    if table is None:
        if key in new:
            raise Malformed(f"'{key}' in the {host.label} config is not an object")
        if uninstall:
            return new
        table = new[key] = {}
    for spec in host.hooks.specs:
        current = table.get(spec.host_event)
        if current is not None and not isinstance(current, list):
            raise Malformed(f"{key}.{spec.host_event} in the {host.label} config is not a list")
        want = _hook_item(host, spec, base, pins)
        items = _entries_of(host, current)
        if not uninstall and any(item == want for item in items):
            continue  # already exactly right
        _remove_ours(host, table, spec.host_event)
        if uninstall:
            continue
        group: dict[str, Any] = want if host.hooks.style == "flat" else {"hooks": [want]}
        table.setdefault(spec.host_event, []).append(group)
    if uninstall and not table and key in config and config[key] != {}:
        del new[key]
    return new


# -- MCP ---------------------------------------------------------------------------------------


def mcp_status_json(host: Host, config: dict[str, Any] | None) -> str:
    servers = (config or {}).get(host.mcp.table)
    if not isinstance(servers, dict) or MCP_NAME not in servers:
        return "missing"
    return "wired" if _is_our_mcp(servers[MCP_NAME]) else "foreign"


def apply_mcp_json(
    host: Host, config: dict[str, Any], base: list[str], uninstall: bool, pins: Sequence[str] = ()
) -> dict[str, Any]:
    key = host.mcp.table
    new = copy.deepcopy(config)
    servers = new.get(key)
    if servers is not None and not isinstance(servers, dict):
        raise Malformed(f"'{key}' in {host.mcp_path(Path('~'))} is not an object")
    state = mcp_status_json(host, new)
    if state == "foreign":
        return new  # never overwrite an entry memwire did not write
    if uninstall:
        if state == "wired" and isinstance(servers, dict):
            del servers[MCP_NAME]
            if (
                not servers
                and key in config
                and config[key] == {MCP_NAME: config[key].get(MCP_NAME)}
            ):
                del new[key]
        return new
    want = mcp_entry(host, base, pins)
    if servers is None:
        servers = new[key] = {}
    if servers.get(MCP_NAME) != want:
        servers[MCP_NAME] = want
    return new


def _toml_string(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def mcp_status_toml(host: Host, text: str | None) -> str:
    if text is None:
        return "missing"
    parsed = _files.toml_parse(text)
    servers = (parsed or {}).get(host.mcp.table)
    has_block = _files.toml_block(text, _files.toml_begin(host.name)) is not None
    if parsed is None:  # no TOML parser: judge by the markers and a header search
        if has_block:
            return "wired"
        header = re.escape(f"[{host.mcp.table}.{MCP_NAME}]")
        return "foreign" if re.search(r"^\s*" + header, text, re.M) else "missing"
    if not isinstance(servers, dict) or MCP_NAME not in servers:
        return "missing"
    return "wired" if has_block and _is_our_mcp(servers[MCP_NAME]) else "foreign"


def apply_mcp_toml(
    host: Host, text: str | None, base: list[str], uninstall: bool, pins: Sequence[str] = ()
) -> str | None:
    """The new TOML config text (None: leave the file as it is / do not create it)."""
    current = text or ""
    state = mcp_status_toml(host, text)
    if state == "foreign":
        return text
    begin = _files.toml_begin(host.name)
    stripped = _files.toml_without_block(current, begin)
    if uninstall:
        return stripped if text is not None and stripped != current else text
    entry = mcp_entry(host, base, pins)
    args = ", ".join(_toml_string(a) for a in entry["args"])
    header = f"[{host.mcp.table}.{MCP_NAME}]"
    block = (
        f"{begin}\n{header}\n"
        f"command = {_toml_string(entry['command'])}\nargs = [{args}]\n{_files.TOML_END}\n"
    )
    if _files.toml_block(current, begin) == block:
        return text
    prefix = stripped
    if prefix and not prefix.endswith("\n"):
        prefix += "\n"
    if prefix.strip():
        prefix += "\n"
    new = prefix + block
    try:
        _files.toml_parse(new)
    except Malformed as exc:
        raise Malformed(f"adding {header} would break {host.paths.mcp_file} ({exc})") from None
    return new


# -- one host ----------------------------------------------------------------------------------


def inspect_host(host: Host, home: Path) -> HostReport:
    """What is wired in ``host``'s config under ``home``; reads only, never writes."""
    report = HostReport(host=host.name, label=host.label, present=host.present(home))
    try:
        hooks_cfg = _files.load_json(host.hooks_path(home))
        report.hooks = hooks_status(host, hooks_cfg)
        if host.mcp.style == "json":
            report.mcp = mcp_status_json(host, _files.load_json(host.mcp_path(home)))
        else:
            report.mcp = mcp_status_toml(host, _files.load_toml_text(host.mcp_path(home)))
    except Malformed as exc:
        report.error = str(exc)
        report.hooks = {spec.host_event: False for spec in host.hooks.specs}
    report.skill = host.skill_path(home).is_file()
    wired = sum(report.hooks.values()) + (report.mcp == "wired")
    total = len(host.hooks.specs) + 1
    if wired == total:
        report.state = "wired"
    elif wired:
        report.state = "partial"
    elif report.present:
        report.state = "present"
    else:
        report.state = "absent"
    if report.mcp == "foreign" and report.state == "wired":  # pragma: no cover - unreachable
        report.state = "partial"
    return report


def connect_host(
    host: Host,
    home: Path,
    *,
    uninstall: bool = False,
    skill: bool = False,
    base: list[str] | None = None,
    pins: Sequence[str] = (),
) -> HostReport:
    """Wire (or unwire) ``host``; nothing is written when any of its files is malformed.
    ``pins`` (:func:`pin_args`) go into every hook command and the MCP entry alike."""
    base = base or base_command()
    writes: dict[Path, str | None] = {}  # path -> new text (None: delete)
    try:
        hooks_path = host.hooks_path(home)
        mcp_path = host.mcp_path(home)
        hooks_cfg = _files.load_json(hooks_path)
        # The hooks and the MCP entry may share one file (a host with one settings file).
        same = hooks_path == mcp_path
        new_hooks = apply_hooks(host, hooks_cfg or {}, base, uninstall, pins)
        if host.mcp.style == "json":
            mcp_cfg = new_hooks if same else (_files.load_json(mcp_path) or {})
            before_mcp = (hooks_cfg or {}) if same else (_files.load_json(mcp_path) or {})
            new_mcp = apply_mcp_json(host, mcp_cfg, base, uninstall, pins)
            if same:
                new_hooks = new_mcp
            elif new_mcp != before_mcp and (mcp_path.exists() or not uninstall):
                writes[mcp_path] = _files.dump_json(new_mcp)
        else:
            text = _files.load_toml_text(mcp_path)
            new_text = apply_mcp_toml(host, text, base, uninstall, pins)
            if new_text is not None and new_text != text:
                writes[mcp_path] = new_text
        if new_hooks != (hooks_cfg or {}) and (hooks_path.exists() or not uninstall):
            writes[hooks_path] = _files.dump_json(new_hooks)
    except Malformed as exc:
        report = inspect_host(host, home)
        report.error = f"{exc}; nothing was changed"
        return report
    report = HostReport(host=host.name, label=host.label)
    for path, text in writes.items():
        if text is None:
            continue
        saved = _files.write_text(path, text)
        report.changed.append(str(path))
        if saved is not None:
            report.backups.append(str(saved))
    if skill or uninstall:
        _skill(host, home, uninstall, report)
    final = inspect_host(host, home)
    final.changed, final.backups, final.removed = report.changed, report.backups, report.removed
    if not uninstall and final.state == "wired":
        final.next_steps = list(host.next_steps)
    return final


def _skill(host: Host, home: Path, uninstall: bool, report: HostReport) -> None:
    path = host.skill_path(home)
    text = skill_text()
    if uninstall:
        if path.is_file():
            try:
                ours = path.read_text(encoding="utf-8").lstrip().startswith("---\nname: memwire")
            except (OSError, UnicodeDecodeError):
                ours = False
            if ours:
                path.unlink()
                report.removed.append(str(path))
                with contextlib.suppress(OSError):
                    path.parent.rmdir()
        return
    try:
        current = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        current = None
    if current == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    saved = _files.write_text(path, text)
    report.changed.append(str(path))
    if saved is not None:
        report.backups.append(str(saved))


def hosts_for(names: list[str], home: Path) -> list[Host]:
    """The hosts named (all hosts whose config directory exists when none is named)."""
    if names:
        unknown = [n for n in names if n not in HOSTS]
        if unknown:
            raise ValueError(f"unknown host(s): {', '.join(unknown)} (known: {', '.join(HOSTS)})")
        return [HOSTS[n] for n in names]
    return [h for h in HOSTS.values() if h.present(home)]
