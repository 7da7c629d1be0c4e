"""engram: long-term memory for LLM agents."""

import os

# One BLAS thread, set before numpy loads OpenBLAS (so no helper thread is made). Two threads
# ran each small product on both cores, and OpenBLAS's helper spins while it waits: under load
# it took a core of its own (docs/benchmarks.md). Not through threadpoolctl: its scan of the
# loaded libraries deadlocks against an import in another thread (seen: tenant create hung).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"
