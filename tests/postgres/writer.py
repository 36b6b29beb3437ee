"""A writer process of the replica test: retains through the servers in turn, and right after
each acknowledgement asks every server for the memory by its unique token.

    python writer.py WRITER COUNT PORT [PORT ...]

Prints one JSON line per retain: ``{"id", "token", "via", "missed": [ports]}``, or
``{"error": ...}`` for a request that failed; never raises.
"""

from __future__ import annotations

import json
import sys

import httpx

BANK = "team"


def token(writer: int, n: int) -> str:
    """A word no other memory contains (letters only: the tokenizer keeps it whole)."""
    return "tok" + "".join(chr(ord("a") + int(d)) for d in f"{writer}{n:04d}") + "zed"


def main() -> None:
    writer, count = int(sys.argv[1]), int(sys.argv[2])
    ports = [int(p) for p in sys.argv[3:]]
    clients = [httpx.Client(base_url=f"http://127.0.0.1:{p}", timeout=60) for p in ports]
    for n in range(count):
        word = token(writer, n)
        via = (writer + n) % len(ports)
        try:
            r = clients[via].post(
                f"/banks/{BANK}/retain",
                json={
                    "content": f"writer {writer} wrote note {n} about {word}",
                    "tags": [f"w{writer}"],
                },
            )
            if r.status_code != 200:
                print(json.dumps({"error": f"retain {r.status_code} {r.text}"}), flush=True)
                continue
            memory_id = r.json()["id"]
            missed = []
            for port, client in zip(ports, clients, strict=True):
                hits = client.post(f"/banks/{BANK}/recall", json={"query": word, "format": "full"})
                if hits.status_code != 200:
                    print(
                        json.dumps({"error": f"recall {hits.status_code} {hits.text}"}), flush=True
                    )
                    missed.append(port)
                elif memory_id not in [h["id"] for h in hits.json()]:
                    missed.append(port)
            print(
                json.dumps({"id": memory_id, "token": word, "via": ports[via], "missed": missed}),
                flush=True,
            )
        except httpx.HTTPError as exc:
            print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)


if __name__ == "__main__":
    main()
