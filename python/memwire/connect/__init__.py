"""``memwire connect``: write memwire's hooks, MCP server and skill into agent hosts' configs.

The hosts, where each keeps its config and what goes in it, are :mod:`memwire.hosts` (one file
per host). See :mod:`memwire.connect.wire` for the rules (idempotent, backups, malformed
configs refused, foreign entries never touched) and docs/hosts.md for what each host gets.
"""

from __future__ import annotations

from pathlib import Path

from memwire.connect.wire import HostReport, connect_host, hosts_for, inspect_host, pin_args
from memwire.hosts import HOSTS, Host, host_names

__all__ = ["HOSTS", "Host", "HostReport", "connect", "host_names", "list_hosts"]


def _home(home: str | Path | None) -> Path:
    return Path(home).expanduser() if home is not None else Path.home()


def connect(
    hosts: list[str] | None = None,
    *,
    home: str | Path | None = None,
    uninstall: bool = False,
    skill: bool = False,
    base: list[str] | None = None,
    bank: str | None = None,
    db: str | None = None,
) -> list[HostReport]:
    """Wire (or with ``uninstall`` unwire) the named hosts, or every host found under ``home``.
    ``bank`` / ``db`` pin one bank / store file into every hook and the MCP entry (default:
    the project's bank by the rule of :mod:`memwire.project`, the default store). Raises
    ValueError for an unknown host name."""
    root = _home(home)
    pins = pin_args(bank, db)
    return [
        connect_host(h, root, uninstall=uninstall, skill=skill, base=base, pins=pins)
        for h in hosts_for(list(hosts or []), root)
    ]


def list_hosts(
    hosts: list[str] | None = None, *, home: str | Path | None = None
) -> list[HostReport]:
    """What is wired in each host (all known hosts when none is named); writes nothing."""
    root = _home(home)
    chosen = [HOSTS[n] for n in hosts] if hosts else list(HOSTS.values())
    return [inspect_host(h, root) for h in chosen]
