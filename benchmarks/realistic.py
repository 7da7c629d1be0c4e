"""Realistic text for the benchmarks, read from the public evaluation sets in ../shared/data (never
copied): facts as people state them, chat turns of 100-300 words, and questions, in English and
Chinese. Lengths follow the sources; turns are consecutive lines of one real conversation joined
until they reach a length drawn uniformly from the turn range.

    facts:  LoCoMo's observations (en, ~17 words), MADial's memory archive (zh, ~35 characters)
    turns:  LoCoMo sessions (en), MADial dialogues (zh; 1.5 characters count as a word)
    questions: LoCoMo's questions (en), the user's lines of MADial's dialogues (zh)
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from engram.evaluation.datasets import _dialogue_line, json_lines

DATA = Path("../shared/data")
TURN_WORDS = (100, 300)
ZH_CHARS_PER_WORD = 1.5


@dataclass(frozen=True)
class Mix:
    """One kind of text to measure: its name, and where to draw texts from."""

    name: str
    language: str
    kind: str  # fact | turn

    def texts(self, count: int, rng: random.Random) -> list[str]:
        """``count`` distinct texts (a number is added to repeats once the source runs out)."""
        draw = _facts(self.language) if self.kind == "fact" else _turns(self.language)
        picked = [rng.choice(draw) for _ in range(count)]
        seen: dict[str, int] = {}
        distinct = []
        for text in picked:
            seen[text] = seen.get(text, 0) + 1
            distinct.append(text if seen[text] == 1 else f"{text} ({seen[text]})")
        return distinct


MIXES = [
    Mix("facts, English", "en", "fact"),
    Mix("facts, Chinese", "zh", "fact"),
    Mix("chat turns, English", "en", "turn"),
    Mix("chat turns, Chinese", "zh", "turn"),
]


def missing(root: Path = DATA) -> str | None:
    """Why the realistic mixes cannot run here, or None."""
    needed = [root / "locomo" / "locomo10.json", root / "madial-bench" / "MADial-Bench-zh-memory.json"]
    absent = [str(p) for p in needed if not p.exists()]
    return f"evaluation data not found: {', '.join(absent)}" if absent else None


@cache
def _locomo() -> list[dict]:
    return json.loads((DATA / "locomo" / "locomo10.json").read_text(encoding="utf-8"))


@cache
def _facts(language: str) -> list[str]:
    if language == "en":
        return [
            fact
            for sample in _locomo()
            for per_speaker in sample["observation"].values()
            for facts in per_speaker.values()
            for fact, _evidence in facts
        ]
    folder = DATA / "madial-bench"
    return [entry["event"] for d in json_lines(folder / "MADial-Bench-zh-memory.json") for entry in d.values()]


def _sessions(language: str) -> list[list[str]]:
    if language == "en":
        return [
            [f"{turn['speaker']}: {turn['text']}" for turn in session]
            for sample in _locomo()
            for key, session in sample["conversation"].items()
            if key.startswith("session_") and isinstance(session, list)
        ]
    dialogues = json_lines(DATA / "madial-bench" / "MADial-Bench-zh-dialogue.json")
    return [[text for line in d["dialogue"] if (text := _dialogue_line(line))] for d in dialogues]


def length(text: str, language: str) -> float:
    return len(text.split()) if language == "en" else len(text) / ZH_CHARS_PER_WORD


@cache
def _turns(language: str) -> list[str]:
    """Consecutive lines of one conversation, joined up to a length drawn from TURN_WORDS."""
    rng = random.Random(f"turns-{language}")
    joined = []
    for lines in _sessions(language):
        start = 0
        while start < len(lines):
            target, parts, end = rng.uniform(*TURN_WORDS), [], start
            while end < len(lines) and length("\n".join(parts), language) < target:
                parts.append(lines[end])
                end += 1
            if length("\n".join(parts), language) >= TURN_WORDS[0]:
                joined.append("\n".join(parts))
            start = end
    return joined


@cache
def questions(language: str) -> list[str]:
    if language == "en":
        return [qa["question"] for sample in _locomo() for qa in sample["qa"]]
    dialogues = json_lines(DATA / "madial-bench" / "MADial-Bench-zh-dialogue.json")
    return [
        text.split(": ", 1)[1]
        for d in dialogues
        for line in d["dialogue"]
        if (text := _dialogue_line(line)) and not text.startswith("Assistant:")
    ]


def describe() -> list[str]:
    """Each mix's size and mean length, for the report."""
    lines = []
    for mix in MIXES:
        texts = _facts(mix.language) if mix.kind == "fact" else _turns(mix.language)
        words = sum(length(t, mix.language) for t in texts) / len(texts)
        lines.append(f"{mix.name}: {len(texts)} source texts, {words:.0f} words on average")
    return lines
