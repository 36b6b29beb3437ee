"""memwire never reaches the network: importing, loading the bundled embedder, retaining,
recalling and snapshotting all work with every non-loopback connection refused."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import memwire


def test_full_cycle_with_the_network_cut_off(tmp_path: Path) -> None:
    # A fresh interpreter, so nothing was imported (or cached) before the guard is in place.
    code = textwrap.dedent(
        f"""
        import socket
        real_connect = socket.socket.connect

        def guarded(self, address):
            host = address[0] if isinstance(address, tuple) else address
            if host not in ("127.0.0.1", "::1", "localhost") and not str(host).startswith("/"):
                raise OSError(f"network access attempted: {{address!r}}")
            return real_connect(self, address)

        socket.socket.connect = guarded
        socket.create_connection = lambda *a, **k: (_ for _ in ()).throw(
            OSError(f"network access attempted: {{a!r}}")
        )
        import memwire
        with memwire.Memory({str(tmp_path / "m.db")!r}) as m:
            m.retain("the deploy key rotates on fridays", bank="ops")
            m.retain("authentication is handled by the gateway", bank="ops")
            hits = m.recall("where is login handled?", bank="ops")
            assert hits and hits[0].content.startswith("authentication"), hits
        with memwire.Memory({str(tmp_path / "m.db")!r}) as m:
            assert m.recall("deploy key", bank="ops")[0].content.startswith("the deploy key")
        print("ok", memwire.backend_info().name)
        """
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "MEMWIRE_HOME": str(tmp_path)}
    env["PYTHONPATH"] = str(Path(memwire.__file__).resolve().parent.parent)
    env["HF_HUB_OFFLINE"] = "1"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok")


def test_no_module_imports_a_network_client_at_import_time() -> None:
    code = (
        "import sys, memwire, memwire.memory, memwire.embed.static; "
        "print(sorted(m for m in ('requests', 'httpx', 'huggingface_hub', 'urllib3') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
