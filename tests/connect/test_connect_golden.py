"""What ``memwire connect`` writes, byte for byte, for every host: fresh homes, homes with
foreign and stale entries, uninstalls, foreign ``memwire`` MCP entries, odd executable paths.

``golden.json`` was written by the code before the host facts moved into ``memwire.hosts``
(commit a2ab80f); any change to a host's files shows up here. After an intended format change,
regenerate it with ``python tests/connect/test_connect_golden.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memwire.connect import connect, host_names, list_hosts

GOLDEN = Path(__file__).resolve().parent / "golden.json"
BASE = ["/opt/memwire/bin/memwire"]
_STAMP = re.compile(r"\.memwire-backup-\d{8}T\d{6}\d{6}Z")


def _seed_existing(home: Path) -> None:
    """Configs with the user's own entries and a stale memwire entry from an older install."""
    stale = "/old/bin/memwire hook {} --host {}"
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text(
        json.dumps(
            {
                "theme": "dark",
                "hooks": {
                    "Stop": [
                        {"hooks": [{"type": "command", "command": "say done"}]},
                        {"hooks": [{"type": "command", "command": stale.format("stop", "claude")}]},
                    ],
                    "UserPromptSubmit": [
                        {
                            "matcher": "",
                            "hooks": [
                                {"type": "command", "command": "lint-prompt"},
                                {
                                    "type": "command",
                                    "command": stale.format("prompt", "claude"),
                                    "timeout": 9,
                                },
                            ],
                        }
                    ],
                    "PreToolUse": [
                        {"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}]}
                    ],
                },
            },
            indent=4,
        )
    )
    (home / ".claude.json").write_text(
        json.dumps({"numStartups": 3, "mcpServers": {"other": {"command": "x", "args": []}}})
    )
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text(
        'model = "o3"\n\n[mcp_servers.docs]\ncommand = "docs"\n\n'
        "# >>> memwire (written by `memwire connect`; `memwire connect codex --uninstall` removes "
        'it)\n[mcp_servers.memwire]\ncommand = "/old/bin/memwire"\nargs = ["mcp"]\n'
        '# <<< memwire\n\n[profiles.fast]\nmodel = "o4-mini"\n'
    )
    (home / ".codex" / "hooks.json").write_text(
        json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]}})
    )
    (home / ".cursor").mkdir()
    (home / ".cursor" / "hooks.json").write_text(
        json.dumps(
            {
                "hooks": {
                    "stop": [{"command": "audit.sh"}, {"command": stale.format("stop", "cursor")}],
                    "afterFileEdit": [{"command": "fmt.sh"}],
                }
            }
        )
    )
    (home / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {}}))
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").write_text(
        json.dumps(
            {
                "ui": {"theme": "GitHub"},
                "mcpServers": {"github": {"command": "gh-mcp"}},
                "hooks": {
                    "BeforeTool": [
                        {"matcher": "run_shell", "hooks": [{"type": "command", "command": "x"}]}
                    ]
                },
            }
        )
    )


def _seed_foreign(home: Path) -> None:
    """``memwire`` MCP entries the user wrote: reported as foreign and left alone."""
    for host in (".cursor", ".gemini", ".codex"):
        (home / host).mkdir()
    foreign = {"mcpServers": {"memwire": {"url": "https://memory.example.com/mcp"}}}
    (home / ".cursor" / "mcp.json").write_text(json.dumps(foreign))
    (home / ".gemini" / "settings.json").write_text(json.dumps(foreign))
    (home / ".claude.json").write_text(
        json.dumps({"mcpServers": {"memwire": {"command": "node", "args": ["memwire.js"]}}})
    )
    (home / ".codex" / "config.toml").write_text(
        '[mcp_servers.memwire]\nurl = "https://memory.example.com/mcp"\n'
    )


def _files(home: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for path in sorted(home.rglob("*")):
        if not path.is_file():
            continue
        rel = _STAMP.sub(".memwire-backup-<stamp>", str(path.relative_to(home)))
        if rel != str(path.relative_to(home)):
            # backups: how many (their stamps do not sort by time; tests/connect checks content)
            out[rel] = str(int(out.get(rel, "0")) + 1)
        elif path.name == "SKILL.md":
            out[rel] = "<the packaged SKILL.md>"
        else:
            out[rel] = path.read_text(encoding="utf-8")
    return out


def _relative(home: Path, value: Any) -> Any:
    if isinstance(value, str):
        return _STAMP.sub(".memwire-backup-<stamp>", value.replace(str(home), "~"))
    if isinstance(value, list):
        return [_relative(home, v) for v in value]
    if isinstance(value, dict):
        return {k: _relative(home, v) for k, v in value.items()}
    return value


@contextmanager
def _clean_env() -> Iterator[None]:
    saved = os.environ.pop("CODEX_HOME", None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ["CODEX_HOME"] = saved


def _scenario(home: Path, steps: list[Callable[[], list[Any]]]) -> dict[str, Any]:
    record: dict[str, Any] = {"steps": []}
    for step in steps:
        reports = [_relative(home, r.as_dict()) for r in step()]
        record["steps"].append({"reports": reports, "files": _files(home)})
    record["list"] = [_relative(home, r.as_dict()) for r in list_hosts(home=home)]
    return record


def compute(root: Path) -> dict[str, Any]:
    """Every scenario's reports and resulting files (paths relative to the fake HOME)."""
    out: dict[str, Any] = {}
    hosts = host_names()  # every registered host
    with _clean_env():
        home = root / "fresh"
        home.mkdir()
        out["fresh"] = _scenario(
            home,
            [
                lambda: connect(hosts, home=home, base=BASE, skill=True),
                lambda: connect(hosts, home=home, base=BASE, skill=True),  # changes nothing
                lambda: connect(hosts, home=home, uninstall=True),
            ],
        )
        home = root / "quoting"
        home.mkdir()
        odd = ["/opt/My Tools/py'thon 3", "-m", "memwire"]
        out["quoting"] = _scenario(home, [lambda: connect(hosts, home=home, base=odd)])
        home = root / "existing"
        home.mkdir()
        _seed_existing(home)
        out["existing"] = _scenario(
            home,
            [
                lambda: connect(None, home=home, base=BASE),  # every host found
                lambda: connect(hosts, home=home, uninstall=True),
            ],
        )
        home = root / "foreign"
        home.mkdir()
        _seed_foreign(home)
        out["foreign"] = _scenario(
            home,
            [
                lambda: connect(hosts, home=home, base=BASE),
                lambda: connect(hosts, home=home, uninstall=True),
            ],
        )
        home = root / "absent"
        home.mkdir()
        out["absent"] = _scenario(home, [lambda: connect(hosts, home=home, uninstall=True)])
    return out


def test_every_host_writes_what_it_always_wrote(tmp_path: Path) -> None:
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    actual = compute(tmp_path)
    assert actual.keys() == expected.keys()
    for name in expected:
        assert actual[name] == expected[name], name


if __name__ == "__main__":  # pragma: no cover - regenerates the golden file
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        data = compute(Path(scratch))
    GOLDEN.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN}")
