"""engram's own evaluation sets that are assembled at load time from hand-written parts.

``longhistory``, long chat histories in the manner of LongMemEval. There are six users, three in
the dev split and three in test. Each has a year of 25-30 dated sessions, 500-700 turns in all.
Most turns are LoCoMo's, read from ../shared/data at load time and never copied; the user's name
and a friend's replace LoCoMo's speakers. Hidden among them are the hand-written needle turns of
tests/data/longhistory.json, and the questions ask about those: a preference, a fact that later
changed (only the latest is gold), an answer spread over several sessions, a question with a time
in it, or a single fact asked in other words. The short sets cannot measure this: finding a few
turns among hundreds of ordinary ones. Dev users take filler only from LoCoMo conversations 0-4
and test users only from 5-9, which is LoCoMo's own split, so held-out text stays held out. Every
choice is seeded by the user, so every run builds the same corpus.

``longreplies``, the same users, needles and questions with the lengths of a chat with an assistant:
the user's turns stay as they are (a sentence or two), and each of the partner's turns becomes an
assistant's reply of 1,000-3,000 characters (that turn followed by others of the same split's
partner turns, as one paragraph). The needles are short user turns among long replies that hold
many words of every topic: a keyword channel that favours long memories fails here, where sets
of even lengths cannot see it.

``paraphrase``, the crosslingual facts asked with rewordings (tests/data/paraphrase.jsonl) that
share few words with the fact, each language on its own. It measures paraphrase, not translation.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from engram.errors import InvalidInput
from engram.evaluation.datasets import EvalCorpus, EvalGroup, EvalMemory, EvalQuestion, json_lines, locomo_date

CATEGORIES = ("preference", "update", "aggregation", "temporal", "single")
# LoCoMo's own split: dev tuning never sees the text the test users are built from.
FILLER_CONVERSATIONS = {"dev": range(0, 5), "test": range(5, 10)}
SESSIONS = (25, 30)
TURNS = (500, 700)
HISTORY_DAYS = 360
REPLY_CHARACTERS = (1000, 3000)  # longreplies: an assistant's reply
# What LoCoMo's speakers call each other besides their names. These become the user's name and the friend's.
NICKNAMES = {
    "Caroline": ("Caro",),
    "Melanie": ("Mel", "Mell"),
    "Joanna": ("Jo",),
    "Deborah": ("Deb", "Debs"),
    "Evan": ("Ev",),
    "Calvin": ("Cal",),
}


@dataclass(frozen=True)
class _Source:
    """One LoCoMo session, used as filler."""

    conversation: int
    speakers: tuple[str, str]
    turns: tuple[tuple[str, str], ...]  # (speaker, text)
    when: datetime  # its date in LoCoMo, which keeps the sessions a user is given in their order


@dataclass
class _Session:
    when: datetime
    turns: list[tuple[str, str | None]]  # (content, "story/needle" for a needle turn)


def _sources(root: Path, conversations: range) -> list[_Source]:
    samples = json.loads((root / "locomo" / "locomo10.json").read_text())
    sources = []
    for index in conversations:
        conversation = samples[index]["conversation"]
        speakers = (conversation["speaker_a"], conversation["speaker_b"])
        for key in (k for k in conversation if re.fullmatch(r"session_\d+", k)):
            turns = tuple((t["speaker"], _caption(t)) for t in conversation[key])
            when = locomo_date(conversation.get(f"{key}_date_time", "")) or datetime.min.replace(tzinfo=UTC)
            sources.append(_Source(index, speakers, turns, when))
    return sources


def _caption(turn: dict[str, Any]) -> str:
    """The turn's text as load_locomo writes it, with a shared photo's caption at the end."""
    text: str = turn["text"]
    return f"{text} (shares a photo: {turn['blip_caption']})" if turn.get("blip_caption") else text


def _needle_count(user: dict[str, Any]) -> int:
    return sum(len(story["needles"]) for story in user["stories"])


def _pick_sources(rng: random.Random, pool: list[_Source], needles: int) -> list[_Source]:
    """25-30 sessions whose turns and the needles come to 500-700. The sessions stay in LoCoMo's
    order, so that what one mentions later happens later."""
    for _ in range(1000):
        chosen = rng.sample(pool, rng.randint(*SESSIONS))
        if TURNS[0] <= needles + sum(len(s.turns) for s in chosen) <= TURNS[1]:
            return sorted(chosen, key=lambda s: (s.when, s.conversation))
    raise InvalidInput(f"no {SESSIONS} LoCoMo sessions come to {TURNS} turns")


def _renamer(rng: random.Random, sources: list[_Source], name: str, friend: str) -> dict[int, dict[str, str]]:
    """For each LoCoMo conversation used, its speakers' names and nicknames become the user's name
    or the friend's. Which speaker the user plays is chosen at random."""
    renames = {}
    for conversation in sorted({s.conversation for s in sources}):
        speakers = next(s.speakers for s in sources if s.conversation == conversation)
        roles = (name, friend) if rng.random() < 0.5 else (friend, name)
        renames[conversation] = {
            alias: role
            for speaker, role in zip(speakers, roles, strict=True)
            for alias in (speaker, *NICKNAMES.get(speaker, ()))
        }
    return renames


def _rename(text: str, names: dict[str, str]) -> str:
    pattern = r"\b(" + "|".join(sorted(map(re.escape, names), key=len, reverse=True)) + r")\b"
    return re.sub(pattern, lambda m: names[m.group(1)], text)


def _dates(rng: random.Random, now: datetime, count: int, fixed: set[int]) -> list[datetime]:
    """Session dates over the year before ``now``. Needles placed by days_ago need their own days.
    The remaining sessions fall on other days at random, each at a random time of day."""
    free = [d for d in range(1, HISTORY_DAYS + 1) if d not in fixed]
    days = sorted(fixed | set(rng.sample(free, count - len(fixed))), reverse=True)
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return [midnight - timedelta(days=d) + timedelta(hours=rng.randint(8, 22), minutes=rng.randrange(60)) for d in days]


def _session_index(needle: dict[str, Any], sessions: list[_Session], now: datetime, fixed: set[int]) -> int:
    """A days_ago needle goes in the session on that day. An 'at' needle (0 = first, 1 = last)
    goes among the sessions that no date was fixed for, so it stays out of the temporal questions' days."""
    days = [(now.date() - s.when.date()).days for s in sessions]
    if "days_ago" in needle:
        return days.index(needle["days_ago"])
    free = [i for i, d in enumerate(days) if d not in fixed]
    return free[round(needle["at"] * (len(free) - 1))]


def _reply(rng: random.Random, first: str, replies: list[str]) -> str:
    """An assistant's long reply: ``first`` and then others, until it reaches its length."""
    length, parts = rng.randint(*REPLY_CHARACTERS), [first]
    while sum(map(len, parts)) < length:
        parts.append(rng.choice(replies))
    return " ".join(parts)


def _history(user: dict[str, Any], pool: list[_Source], now: datetime, long_replies: bool = False) -> list[_Session]:
    rng = random.Random(f"longhistory-{user['user']}")
    sources = _pick_sources(rng, pool, _needle_count(user))
    fixed = {n["days_ago"] for story in user["stories"] for n in story["needles"] if "days_ago" in n}
    if len(fixed) > len(sources) or not fixed <= set(range(1, HISTORY_DAYS + 1)):
        raise InvalidInput(f"{user['user']}: days_ago must be 1-{HISTORY_DAYS}, on fewer days than sessions")
    renames = _renamer(rng, sources, user["name"], user["friend"])
    # The partner's turns of the whole split, renamed as the user's partner: an assistant's replies.
    replies = [_rename(t, renames.get(s.conversation, {})) for s in pool for sp, t in s.turns if sp != s.speakers[0]]
    reply_rng = random.Random(f"longreplies-{user['user']}")  # the history itself stays longhistory's
    sessions = []
    for source, when in zip(sources, _dates(rng, now, len(sources), fixed), strict=True):
        names = renames[source.conversation]
        turns: list[tuple[str, str | None]] = []
        for speaker, text in source.turns:
            said = _rename(f"{speaker}: {text}", names)
            if long_replies and names.get(speaker) != user["name"]:
                said = f"assistant: {_reply(reply_rng, _rename(text, names), replies)}"
            turns.append((said, None))
        sessions.append(_Session(when, turns))
    for story in user["stories"]:
        for needle in story["needles"]:
            session = sessions[_session_index(needle, sessions, now, fixed)]
            text = needle["text"].replace("{friend}", user["friend"])
            # Never first in its session: a needle is said in the middle of a conversation.
            session.turns.insert(rng.randint(1, len(session.turns)), (f"{user['name']}: {text}", _key(story, needle)))
    return sessions


def _key(story: dict[str, Any], needle: dict[str, Any]) -> str:
    return f"{story['id']}/{needle['id']}"


def _questions(user: dict[str, Any], needles: dict[str, str], now: datetime) -> list[EvalQuestion]:
    questions = []
    for story in user["stories"]:
        for number, question in enumerate(story["questions"]):
            if question["category"] not in CATEGORIES:
                raise InvalidInput(f"{story['id']}: category is one of {', '.join(CATEGORIES)}")
            keys = [f"{story['id']}/{g}" for g in question["gold"]]
            if not keys or not set(keys) <= set(needles):
                raise InvalidInput(f"{story['id']}: gold {question['gold']} names no needle of the story")
            gold = frozenset(needles[k] for k in keys)
            questions.append(EvalQuestion(f"{story['id']}#{number}", question["q"], gold, question["category"], now))
    return questions


def _group(user: dict[str, Any], pool: list[_Source], now: datetime, long_replies: bool = False) -> EvalGroup:
    memories: list[EvalMemory] = []
    needles: dict[str, str] = {}  # "story/needle" -> external id
    for number, session in enumerate(_history(user, pool, now, long_replies), start=1):
        session_id = f"session_{number}"
        for turn, (content, needle) in enumerate(session.turns, start=1):
            external_id = f"D{number}:{turn}"
            memories.append(
                EvalMemory(external_id, content, session.when, (session_id,), f"{user['user']}/{session_id}")
            )
            if needle:
                needles[needle] = external_id
    return EvalGroup(user["user"], memories, _questions(user, needles, now), user["split"])


def load_longhistory(root: Path, own: Path, long_replies: bool = False) -> EvalCorpus:
    """The long histories: needles and questions from ``own``/longhistory.json, filler from
    LoCoMo at ``root``. Users in the dev split take filler only from conversations 0-4, and test users only from 5-9."""
    data = json.loads((own / "longhistory.json").read_text(encoding="utf-8"))
    now = datetime.fromisoformat(data["now"])
    pools = {split: _sources(root, conversations) for split, conversations in FILLER_CONVERSATIONS.items()}
    corpus = EvalCorpus("longreplies" if long_replies else "longhistory", "en")
    for user in data["users"]:
        if user["split"] not in pools:
            raise InvalidInput(f"{user['user']}: split is dev or test, not {user['split']!r}")
        corpus.groups.append(_group(user, pools[user["split"]], now, long_replies))
    return corpus


def load_paraphrase(path: Path, facts: Path) -> EvalCorpus:
    """The crosslingual facts (``facts``) asked with the rewordings in ``path``, each language on its
    own. The "en" tenant stores every fact in English and asks the English rewordings; "zh" does
    the same in Chinese. Gold is the fact. No split: not tuned on."""
    items = {item["id"]: item for item in json_lines(facts)}
    rows = list(json_lines(path))
    if unknown := [row["id"] for row in rows if row["id"] not in items]:
        raise InvalidInput(f"{path}: ids {unknown} are not in {facts}")
    corpus = EvalCorpus("paraphrase", "zh+en")
    for language in ("en", "zh"):
        memories = [EvalMemory(str(i), item[language]) for i, item in items.items()]
        questions = [
            EvalQuestion(f"{row['id']}:{language}#{n}", text, frozenset({str(row["id"])}), language)
            for row in rows
            for n, text in enumerate(row[f"q_{language}"])
        ]
        corpus.groups.append(EvalGroup(language, memories, questions, "none"))
    return corpus
