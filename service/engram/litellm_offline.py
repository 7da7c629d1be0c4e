"""litellm, the one way in: imported on first use (the import takes seconds) and kept offline. On
first use litellm would fetch its model price list from GitHub (seconds; offline, a stall); its
bundled copy is enough."""

from __future__ import annotations

import os
from types import ModuleType


def litellm() -> ModuleType:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm as module

    return module
