"""A writer process of the replica tests: retains through the servers in turn, and right after
each acknowledgement asks every server for the memory by its unique token.

    python writer.py WRITER COUNT PORT [PORT ...]

Prints one JSON line per retain: ``{"id", "token", "via", "missed": [ports], "failed":
[ports]}`` (``missed``: the server answered without the memory; ``failed``: it did not answer
200), or ``{"error": ...}`` for a retain that was not acknowledged. Never raises: a server may
be killed under it.
"""

from __future__ import annotations

import json
import sys

import httpx

BANK = "team"


def token(writer: int, n: int) -> str:
    """A word no other memory contains (letters only: the tokenizer keeps it whole)."""
    return "tok" + "".join(chr(ord("a") + int(d)) for d in f"{writer}{n:04d}") + "zed"


def say(line: dict[str, object]) -> None:
    print(json.dumps(line), flush=True)


def main() -> None:
    writer, count = int(sys.argv[1]), int(sys.argv[2])
    ports = [int(p) for p in sys.argv[3:]]
    clients = [httpx.Client(base_url=f"http://127.0.0.1:{p}", timeout=60) for p in ports]
    for n in range(count):
        word = token(writer, n)
        via = (writer + n) % len(ports)
        body = {"content": f"writer {writer} wrote note {n} about {word}", "tags": [f"w{writer}"]}
        try:
            r = clients[via].post(f"/banks/{BANK}/retain", json=body)
        except httpx.HTTPError as exc:
            say({"error": f"retain via {ports[via]}: {type(exc).__name__}"})
            continue
        if r.status_code != 200:
            say({"error": f"retain via {ports[via]}: {r.status_code} {r.text}"})
            continue
        memory_id = r.json()["id"]
        missed, failed = [], []
        for port, client in zip(ports, clients, strict=True):
            try:
                hits = client.post(f"/banks/{BANK}/recall", json={"query": word, "format": "full"})
            except httpx.HTTPError:
                failed.append(port)
                continue
            if hits.status_code != 200:
                failed.append(port)
            elif memory_id not in [h["id"] for h in hits.json()]:
                missed.append(port)
        say({"id": memory_id, "token": word, "via": ports[via], "missed": missed, "failed": failed})


if __name__ == "__main__":
    main()
