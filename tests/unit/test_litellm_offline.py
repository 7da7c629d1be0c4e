"""litellm never reaches for the network on import (it would fetch its price list from GitHub:
seconds online, a stall offline); both of its users import it through engram.litellm_offline."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RAW_IMPORT = re.compile(r"^\s*(?:import litellm\b|from litellm\b)", re.MULTILINE)
PROBE = """
import os, socket
tried = []
def refuse(*args, **kwargs):
    tried.append(args)
    raise OSError("no network in this test")
socket.socket.connect = refuse
socket.getaddrinfo = refuse
os.environ.pop("LITELLM_LOCAL_MODEL_COST_MAP", None)
from engram.litellm_offline import litellm
module = litellm()
assert module.model_cost, "the bundled price list is loaded"
print(len(tried))
"""


def test_importing_litellm_opens_no_connection():
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-1500:]
    assert result.stdout.strip() == "0"


def test_every_user_of_litellm_goes_through_the_offline_import():
    users = [
        path.relative_to(ROOT)
        for path in (ROOT / "service" / "engram").rglob("*.py")
        if RAW_IMPORT.search(path.read_text()) and path.name != "litellm_offline.py"
    ]
    assert users == []
