"""Every turn of the public evaluation sets (../shared/data, read in place, never copied), for
property checks of the write path: LoCoMo's turns (English) and MADial-Bench's dialogue lines and
memory archives (Chinese and English)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1].parent / "shared" / "data"
LOCOMO = ROOT / "locomo" / "locomo10.json"
MADIAL = ROOT / "madial-bench"
_SPEAKER = re.compile(r'^<([^>]+)>:\s*"?(.*?)"?\s*$', re.S)


def missing() -> str | None:
    """Why the corpora cannot be read here, or None."""
    absent = [str(p) for p in (LOCOMO, MADIAL) if not p.exists()]
    return f"no evaluation data at {', '.join(absent)}" if absent else None


@cache
def turns() -> tuple[str, ...]:
    """Every turn's text, as its speaker said it (no speaker label)."""
    return tuple(_locomo()) + tuple(_madial())


def _locomo() -> Iterator[str]:
    for sample in json.loads(LOCOMO.read_text(encoding="utf-8")):
        conversation = sample["conversation"]
        for key, session in conversation.items():
            if key.startswith("session_") and isinstance(session, list):
                yield from (turn["text"] for turn in session if turn.get("text"))


def _madial() -> Iterator[str]:
    for language in ("zh", "en"):
        for line in (MADIAL / f"MADial-Bench-{language}-dialogue.json").read_text(encoding="utf-8").splitlines():
            if line.strip():
                for said in json.loads(line)["dialogue"]:
                    match = _SPEAKER.match(said.strip())
                    if match and match.group(2).strip():
                        yield match.group(2)
        for line in (MADIAL / f"MADial-Bench-{language}-memory.json").read_text(encoding="utf-8").splitlines():
            if line.strip():
                yield from (entry["event"] for entry in json.loads(line).values())
