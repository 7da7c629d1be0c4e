"""Benchmarks as engram sees them: groups of memories (one tenant each) and questions with the
external ids of their gold memories. Data is read from ../shared/data, never copied."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import NamedTuple

from engram.errors import InvalidInput

# Which part of each benchmark tuning may look at: the rest is held out.
Split = str  # "dev" | "test" | "all"


@dataclass(frozen=True)
class EvalMemory:
    external_id: str
    content: str
    occurred_at: datetime | None = None
    tags: tuple[str, ...] = ()
    conversation: str | None = None  # written as session_id: neighbours lend context


@dataclass(frozen=True)
class EvalQuestion:
    id: str
    text: str
    gold: frozenset[str]  # external ids of the memories that answer it
    category: str = "all"
    asked_at: datetime | None = None  # the conversation's "now", for relative times


@dataclass
class EvalGroup:
    """What one user (one tenant) has said, and what is later asked of it."""

    key: str
    memories: list[EvalMemory]
    questions: list[EvalQuestion]
    split: str = "dev"


@dataclass
class EvalCorpus:
    name: str
    language: str
    groups: list[EvalGroup] = field(default_factory=list)

    def select(self, split: Split) -> EvalCorpus:
        if split not in ("dev", "test", "all"):
            raise InvalidInput(f"split is dev, test or all, not {split!r}")
        chosen = [g for g in self.groups if split == "all" or g.split in (split, "none")]
        return EvalCorpus(self.name, self.language, chosen)

    @property
    def questions(self) -> int:
        return sum(len(g.questions) for g in self.groups)


LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_DIA_ID = re.compile(r"D:?(\d+):(\d+)")


def locomo_date(text: str) -> datetime | None:
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError:
        return None


def _evidence(raw: list[str], known: set[str]) -> frozenset[str]:
    """Gold ids cleaned of the dataset's quirks ("D8:6; D9:17", "D:11:26"); unknown ids dropped."""
    found = {f"D{s}:{t}" for item in raw for s, t in _DIA_ID.findall(item)}
    return frozenset(found & known)


def load_locomo(root: Path) -> EvalCorpus:
    """Every turn one memory ("speaker: text", a shared photo's caption appended), dated by its
    session; questions of categories 1-4 rank the turns of their own conversation. Conversations
    0-4 are the dev split, 5-9 the held-out test split."""
    path = root / "locomo" / "locomo10.json"
    corpus = EvalCorpus("locomo", "en")
    for index, sample in enumerate(json.loads(path.read_text())):
        conversation = sample["conversation"]
        memories: list[EvalMemory] = []
        latest: datetime | None = None
        for session in sorted((k for k in conversation if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k[8:])):
            when = locomo_date(conversation.get(f"{session}_date_time", ""))
            latest = max(filter(None, [latest, when]), default=None)
            for turn in conversation[session]:
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" (shares a photo: {turn['blip_caption']})"
                conversation_id = f"{sample['sample_id']}/{session}"
                memories.append(EvalMemory(turn["dia_id"], text, when, (session,), conversation_id))
        known = {m.external_id for m in memories}
        questions = []
        for number, qa in enumerate(sample["qa"]):
            if qa.get("category") not in LOCOMO_CATEGORIES:
                continue
            gold = _evidence(qa.get("evidence", []), known)
            if gold:
                category = LOCOMO_CATEGORIES[qa["category"]]
                questions.append(
                    EvalQuestion(f"{sample['sample_id']}#{number}", qa["question"], gold, category, latest)
                )
        split = "dev" if index < 5 else "test"
        corpus.groups.append(EvalGroup(sample["sample_id"], memories, questions, split))
    return corpus


def json_lines(path: Path) -> Iterator[dict]:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            yield json.loads(line)


_SPEAKER = re.compile(r'^<([^>]+)>:\s*"?(.*?)"?\s*$', re.S)


def _dialogue_line(line: str) -> str | None:
    match = _SPEAKER.match(line.strip())
    return f"{match.group(1)}: {match.group(2)}" if match else None


def load_madial(root: Path, language: str) -> EvalCorpus:
    """The memory archive of each user is a tenant (the English archive carries no user id; it
    shares ids with the Chinese one, which does); a question is the dialogue up to the turn that
    should recall a memory, asked the day after the user's latest memory (the dialogues carry no
    date of their own). Dialogues at even positions are the dev split, odd the test split."""
    folder = root / "madial-bench"
    archives = {
        lang: {k: v for d in json_lines(folder / f"MADial-Bench-{lang}-memory.json") for k, v in d.items()}
        for lang in (language, "zh")
    }
    users = {k: v["user-id"] for k, v in archives["zh"].items()}
    corpus = EvalCorpus(f"madial-{language}", language)
    by_user: dict[int, EvalGroup] = {}
    for memory_id, entry in archives[language].items():
        user = users[memory_id]
        group = by_user.setdefault(user, EvalGroup(f"user-{user}", [], []))
        when = datetime.strptime(entry["time"], "%Y-%m-%d").replace(tzinfo=UTC)
        group.memories.append(EvalMemory(memory_id, entry["event"], when, (entry["scene"], entry["emotion"])))
    groups = {
        (user, split): EvalGroup(g.key, g.memories, [], split)
        for user, g in by_user.items()
        for split in ("dev", "test")
    }
    asked = {
        user: max(m.occurred_at for m in g.memories if m.occurred_at) + timedelta(days=1) for user, g in by_user.items()
    }
    for index, dialogue in enumerate(json_lines(folder / f"MADial-Bench-{language}-dialogue.json")):
        turn = dialogue["test-turn"][0]
        lines = [text for line in dialogue["dialogue"][1:turn] if (text := _dialogue_line(line))]
        gold = frozenset(str(i) for i in dialogue["relevant-id"]) & set(archives[language])
        split = "dev" if index % 2 == 0 else "test"
        user = dialogue["user-id"]
        question = EvalQuestion(f"{corpus.name}#{index}", "\n".join(lines)[-4000:], gold, asked_at=asked[user])
        groups[(user, split)].questions.append(question)
    corpus.groups = [g for g in groups.values() if g.questions]
    return corpus


def load_crosslingual(path: Path) -> EvalCorpus:
    """engram's own bilingual set (tests/data/crosslingual.jsonl): each fact stored in one language,
    asked in the other, in a tenant holding both languages. Two tenants swap which half is in
    which language, so every fact is asked both ways (zh->en and en->zh). No split: not tuned on."""
    items = list(json_lines(path))
    corpus = EvalCorpus("crosslingual", "zh+en")
    for swap in (0, 1):
        stored_in = {item["id"]: ("en" if (item["id"] + swap) % 2 else "zh") for item in items}
        memories = [EvalMemory(str(item["id"]), item[stored_in[item["id"]]]) for item in items]
        questions = []
        for item in items:
            asked_in = "zh" if stored_in[item["id"]] == "en" else "en"
            direction = f"{asked_in}->{stored_in[item['id']]}"
            questions.append(
                EvalQuestion(
                    f"{item['id']}:{direction}", item[f"q_{asked_in}"], frozenset({str(item["id"])}), direction
                )
            )
        corpus.groups.append(EvalGroup(f"mixed-{swap}", memories, questions, "none"))
    return corpus


def load_temporal(path: Path) -> EvalCorpus:
    """engram's own set for time in queries (tests/data/temporal.json): dated memories that differ
    only in when they happened, asked with "yesterday", "in May", "上周", "上次" at a fixed "now"."""
    data = json.loads(path.read_text(encoding="utf-8"))
    now = datetime.fromisoformat(data["now"])
    memories = [EvalMemory(m["id"], m["content"], datetime.fromisoformat(m["occurred_at"])) for m in data["memories"]]
    questions = [
        EvalQuestion(
            f"temporal#{i}", q["q"], frozenset(q["gold"]), "zh" if re.search(r"[\u4e00-\u9fff]", q["q"]) else "en", now
        )
        for i, q in enumerate(data["questions"])
    ]
    return EvalCorpus("temporal", "zh+en", [EvalGroup("diary", memories, questions, "none")])


def _longhistory(root: Path, own: Path, long_replies: bool = False) -> EvalCorpus:
    from engram.evaluation.generated import load_longhistory  # generated.py builds on this module

    return load_longhistory(root, own, long_replies)


def _paraphrase(root: Path, own: Path) -> EvalCorpus:
    from engram.evaluation.generated import load_paraphrase

    return load_paraphrase(own / "paraphrase.jsonl", own / "crosslingual.jsonl")


class OwnSet(NamedTuple):
    files: tuple[str, ...]  # what it reads from ``own`` (tests/data)
    loader: Callable[[Path, Path], EvalCorpus]  # (root, own) -> corpus
    public: bool = False  # also reads the public data at ``root`` (longhistory's filler)


def load_locomo_plain(root: Path) -> EvalCorpus:
    """LoCoMo as the open peers measure it: each turn a plain memory, its text only (no session,
    so no neighbours, and no date), written as a fact like any other."""
    corpus = load_locomo(root)
    plain = [
        EvalGroup(g.key, [EvalMemory(m.external_id, m.content) for m in g.memories], g.questions, g.split)
        for g in corpus.groups
    ]
    return EvalCorpus("locomo-plain", corpus.language, plain)


LOADERS = {
    "locomo": load_locomo,
    "locomo-plain": load_locomo_plain,
    "madial-zh": lambda root: load_madial(root, "zh"),
    "madial-en": lambda root: load_madial(root, "en"),
}
OWN = {
    "crosslingual": OwnSet(("crosslingual.jsonl",), lambda root, own: load_crosslingual(own / "crosslingual.jsonl")),
    "temporal": OwnSet(("temporal.json",), lambda root, own: load_temporal(own / "temporal.json")),
    "longhistory": OwnSet(("longhistory.json",), _longhistory, public=True),
    "longreplies": OwnSet(("longhistory.json",), lambda root, own: _longhistory(root, own, True), public=True),
    "paraphrase": OwnSet(("paraphrase.jsonl", "crosslingual.jsonl"), _paraphrase),
}


def needs_public_data(name: str) -> bool:
    """Whether the set reads the public benchmarks (../shared/data), which a fresh clone lacks."""
    return name in LOADERS or (name in OWN and OWN[name].public)


def load(name: str, root: Path, own: Path = Path("tests/data")) -> EvalCorpus:
    """A public benchmark from ``root`` (../shared/data), or one of engram's own sets from ``own``."""
    if name not in LOADERS and name not in OWN:
        raise InvalidInput(f"unknown benchmark {name!r}; choose from {', '.join([*LOADERS, *OWN])}")
    if name in OWN:
        for filename in OWN[name].files:
            if not (own / filename).is_file():
                raise InvalidInput(f"{own / filename} not found (run from the repository root, or pass --own-data)")
    if needs_public_data(name) and not root.is_dir():
        raise InvalidInput(f"no benchmark data at {root} (expected ../shared/data or --data-dir)")
    return OWN[name].loader(root, own) if name in OWN else LOADERS[name](root)
