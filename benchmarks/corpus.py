"""Synthetic memories and queries for the benchmarks: English and Chinese templates with people,
numbers and identifiers, so every channel has work, and every content is distinct."""

from __future__ import annotations

import random
from collections.abc import Iterator

from engram.domain.models import MemoryType, NewMemory

PEOPLE = ["the user", "Alice", "Bob", "my sister", "the manager", "用户", "小王", "妈妈"]
EN_FACTS = [
    "{p} ordered item {n} from the online shop",
    "{p} prefers green tea over coffee on day {n}",
    "{p} has a meeting about project {n} next Tuesday",
    "{p} booked flight CA{n} to Shanghai",
    "{p} is allergic to peanuts since {n}",
    "{p} moved to apartment {n} on Elm Street",
    "{p} wants a reminder to pay invoice {n}",
    "{p} finished reading chapter {n} of the novel",
]
ZH_FACTS = [
    "{p}的订单{n}已经发货",
    "{p}喜欢在第{n}天喝美式咖啡",
    "{p}预订了第{n}号会议室",
    "{p}的快递单号是SF{n}",
    "{p}在{n}年开始学习钢琴",
]
QUERIES = [
    "what did the user order",
    "where is order {n}",
    "flight CA{n}",
    "用户喜欢喝什么",
    "快递单号SF{n}",
    "who is allergic to peanuts",
    "meeting about project {n}",
    "小王的订单",
    "invoice {n} reminder",
    "what is my sister reading",
]
TEMPLATES = EN_FACTS + ZH_FACTS


def contents(rng: random.Random) -> Iterator[tuple[int, str]]:
    """Endless distinct contents, each with the index of its template."""
    seen: set[str] = set()
    while True:
        index = rng.randrange(len(TEMPLATES))
        content = TEMPLATES[index].format(p=rng.choice(PEOPLE), n=rng.randint(100, 99_999_999))
        if content not in seen:
            seen.add(content)
            yield index, content


def synthetic_memories(count: int, rng: random.Random) -> list[NewMemory]:
    stream = contents(rng)
    return [NewMemory(content=next(stream)[1], type=rng.choice(list(MemoryType))) for _ in range(count)]


def queries(count: int, rng: random.Random) -> list[str]:
    return [rng.choice(QUERIES).format(n=rng.randint(100, 999_999)) for _ in range(count)]
