"""Synthetic contents for growing a benchmark tenant to 100k or 1M memories (benchmarks/fill.py):
English and Chinese templates with people, numbers and identifiers, every content distinct."""

from __future__ import annotations

import random
from collections.abc import Iterator

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
