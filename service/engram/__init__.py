"""engram: long-term memory for LLM agents."""

import os

# One BLAS thread, set before numpy loads OpenBLAS, so its spinning helper thread is never made
# (engram/embedding/blas.py says why, and holds a process that loaded numpy first).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"
