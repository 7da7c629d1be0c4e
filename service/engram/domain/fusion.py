"""How a search candidate's score is made: pure functions, every factor visible in ``explain``.

    relevance = 1 - (1 - wv * vector) (1 - wq * retrieval) (1 - wk * keyword) (1 - wr * rule) (1 - wc * context)
    score     = relevance * time * layer
    wv        = 1 - (1 - w_vector) (1 - w_keyword / 2) for a memory in another language than the query

Each channel gives evidence in [0, 1]: how far the cosine similarity (of query and memory, each
centred on its language's mean: domain/centring.py) rises above the embedding model's noise
level, the same of the second vector (the retrieval model's, where the memory has one yet), the
share of the query's idf a memory holds, the share of the query's identifiers it holds, the
relevance its conversation neighbours lend it. A weight in [0, 1] says how much full
evidence of that channel is worth on its own.
The relevance is the chance that at least one channel is right (a noisy OR): it is bounded by
one, grows with every channel's evidence, and a channel that has nothing to say about a memory
(no shared words, as with a memory in the other language) leaves it where the other channels put
it instead of pulling it down. A memory in another language than the query cannot share its
words: the keyword channel cannot see it, and its silence is no evidence either way. Its vector
evidence then also stands for the keyword channel at even odds (half the keyword's weight), where
a memory in the query's language that shares none of its words has been seen and found wanting;
at full weight, a translation would pass a memory of the answer's time (measured: temporal set).
So a memory's language counts only through what the channels can measure. ``time`` is 1 inside a
time the query named and ``outside_window`` outside it; ``layer`` is the layer's preference. Both
are in [0, 1], so the score is too.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from pydantic import BaseModel, Field

FORMULA = (
    "relevance = 1 - (1 - w_vector*vector)(1 - w_retrieval*retrieval)(1 - w_keyword*keyword)(1 - w_rule*rule)"
    "(1 - w_context*context)"
    "(1 - older), where w_vector is 1 - (1 - w_vector)(1 - w_keyword/2) for a memory in another language than "
    "the query; score = relevance * time * layer * standing"
)
# A memory a newer one may have replaced keeps at most this share of the newer one's score.
BELOW_NEWER = 0.9


class Weights(BaseModel):
    """How much full evidence of each channel is worth on its own (0..1)."""

    vector: float = Field(ge=0, le=1)
    keyword: float = Field(ge=0, le=1)
    rule: float = Field(ge=0, le=1)
    context: float = Field(0.0, ge=0, le=1)
    retrieval: float = Field(0.0, ge=0, le=1, description="the second vector channel (the retrieval model)")

    def vector_for(self, other_language: bool) -> float:
        """The vector channel's weight; for a memory the keyword channel cannot see (another
        language than the query's), it also stands for the keyword channel at even odds."""
        if not other_language:
            return self.vector
        return 1.0 - (1.0 - clip(self.vector)) * (1.0 - clip(self.keyword) / 2)


class ChannelHit(BaseModel):
    """One candidate as a channel scored it."""

    id: UUID
    score: float
    rank: int


class ChannelScores(BaseModel):
    """A candidate's evidence in each channel, 0..1."""

    vector: float = Field(0.0, description="(centred - noise) / (1 - noise): 0 at or below the model's noise level")
    centred: float = Field(0.0, description="cosine similarity once query and memory are centred on their languages")
    cosine: float = Field(0.0, description="the raw cosine similarity to the query")
    retrieval: float = Field(
        0.0, description="the same evidence from the second vector (the retrieval model); 0 while it has none"
    )
    retrieval_centred: float = Field(0.0, description="the second vector's centred cosine similarity")
    keyword: float = Field(
        0.0, description="share of the query's idf the memory holds, less for a long memory (domain/keyword.py)"
    )
    rule: float = Field(0.0, description="share of the query's identifiers the memory holds")
    context: float = Field(0.0, description="best relevance among its conversation neighbours, divided by distance")
    older: float = Field(
        0.0, description="relevance of an older memory this one may have replaced: it answers what that one answered"
    )


class FusedHit(BaseModel):
    id: UUID
    score: float = Field(description="relevance x time x layer, 0..1")
    relevance: float = Field(description="the channels' noisy OR, 0..1")
    channels: ChannelScores
    time: float = Field(1.0, description="1 inside the time the query named, less outside it")
    layer: float = Field(1.0, description="the preference of the memory's layer")
    standing: float = Field(
        1.0,
        description="1, or below 1 to place it below others: a memory a newer one may have replaced (see "
        "newer), or one whose only evidence is its conversation neighbours'",
    )
    newer: UUID | None = Field(None, description="a newer memory that may have replaced this one: ranked above it")
    other_language: bool = Field(
        False, description="in another language than the query: its vector also counts at half the keyword weight"
    )


@dataclass(frozen=True)
class Link:
    """``neighbour`` was written ``distance`` places from ``anchor`` in the same conversation."""

    anchor: UUID
    neighbour: UUID
    distance: int


def clip(value: float) -> float:
    return min(1.0, max(0.0, value))


def relevance(channels: ChannelScores, weights: Weights, other_language: bool = False) -> float:
    return _Odds.of(weights).relevance(channels, other_language)


@dataclass(frozen=True)
class _Odds:
    """The weights, clipped once for a whole candidate list (the formula runs per candidate)."""

    vector: float
    vector_other: float  # for a memory in another language than the query
    retrieval: float
    keyword: float
    rule: float
    context: float

    @classmethod
    def of(cls, w: Weights) -> _Odds:
        return cls(
            clip(w.vector), clip(w.vector_for(True)), clip(w.retrieval), clip(w.keyword), clip(w.rule), clip(w.context)
        )

    def relevance(self, c: ChannelScores, other_language: bool) -> float:
        missed = 1.0 - (self.vector_other if other_language else self.vector) * clip(c.vector)
        missed *= 1.0 - self.retrieval * clip(c.retrieval)
        missed *= 1.0 - self.keyword * clip(c.keyword)
        missed *= 1.0 - self.rule * clip(c.rule)
        missed *= 1.0 - self.context * clip(c.context)
        missed *= 1.0 - clip(c.older)
        return 1.0 - missed


def score_of(hit: FusedHit) -> float:
    """The score as explain states it: reproducible from the hit's own fields."""
    return round(hit.relevance * hit.time * hit.layer * hit.standing, 6)


def _scored(hit: FusedHit, weights: Weights, **changes: object) -> FusedHit:
    updated = hit.model_copy(update=changes)
    updated.relevance = round(relevance(updated.channels, weights, updated.other_language), 6)
    updated.score = score_of(updated)
    return updated


def best_first(hits: Iterable[FusedHit]) -> list[FusedHit]:
    # Ties in id order (a UUID's number orders as its text does).
    return sorted(hits, key=lambda h: (-h.score, h.id.int))


def vector_evidence(centred: float, noise: float) -> float:
    """How far a (centred) cosine rises above the model's noise level, the cosine an unrelated
    memory reaches, on 0..1."""
    return clip((centred - noise) / (1.0 - noise)) if noise < 1 else 0.0


@dataclass(frozen=True)
class Similarity:
    cosine: float  # raw
    centred: float  # query and memory centred on their languages' means
    retrieval_cosine: float = 0.0  # the same of the second vectors (0: the memory has none yet)
    retrieval_centred: float = 0.0


def fuse(
    similarity: dict[UUID, Similarity],
    keyword: list[ChannelHit],
    rule: list[ChannelHit],
    weights: Weights,
    noise: float = 0.0,
    other_language: Collection[UUID] = frozenset(),
    retrieval_noise: float = 0.0,
) -> list[FusedHit]:
    """Every candidate of any channel with its evidence and relevance, best first. The vector
    evidence is known for every candidate (its exact cosine), not only for the vector channel's own.
    ``other_language``: the memories in another language than the query."""
    keyword_of = {h.id: clip(h.score) for h in keyword}
    rule_of = {h.id: clip(h.score) for h in rule}
    odds = _Odds.of(weights)
    fused = []
    for memory_id in {*similarity, *keyword_of, *rule_of}:
        sim = similarity.get(memory_id, Similarity(0.0, 0.0))
        channels = ChannelScores(
            vector=round(vector_evidence(sim.centred, noise), 6),
            centred=round(sim.centred, 6),
            cosine=round(sim.cosine, 6),
            retrieval=round(vector_evidence(sim.retrieval_centred, retrieval_noise), 6),
            retrieval_centred=round(sim.retrieval_centred, 6),
            keyword=round(keyword_of.get(memory_id, 0.0), 6),
            rule=round(rule_of.get(memory_id, 0.0), 6),
        )
        other = memory_id in other_language
        share = round(odds.relevance(channels, other), 6)  # time and layer are 1 here
        fused.append(FusedHit(id=memory_id, score=share, relevance=share, channels=channels, other_language=other))
    return best_first(fused)


def add_context(fused: list[FusedHit], links: list[Link], weights: Weights) -> list[FusedHit]:
    """The answer to a question is often the turn after the one that shares its words: a memory
    next to a relevant one in the same conversation gets its neighbour's relevance, divided by
    their distance, as context evidence. Lent from the channels' own relevance, so context does
    not echo back and forth between neighbours."""
    own = {h.id: h.relevance for h in fused}
    lent: dict[UUID, float] = {}
    for link in links:
        value = own.get(link.anchor, 0.0) / link.distance
        lent[link.neighbour] = max(lent.get(link.neighbour, 0.0), value)
    out = []
    for h in fused:
        context = round(lent.get(h.id, 0.0), 6)
        if context:
            h = _scored(h, weights, channels=h.channels.model_copy(update={"context": context}))
        out.append(h)
    return best_first(out)


def in_time(
    fused: list[FusedHit],
    inside: set[UUID],
    outside_factor: float,
    weights: Weights,
    told_after: Collection[UUID] = frozenset(),
) -> list[FusedHit]:
    """The query named a time: memories of other times keep ``outside_factor`` of their score, so a
    memory of that time comes first among equally good matches, and an irrelevant one of that time
    does not jump ahead of a relevant one (a window is evidence, not a filter). One said soon after
    the window (``told_after``) may tell of it: it keeps half the difference more."""
    factor = clip(outside_factor)
    after = (1.0 + factor) / 2

    def timed(h: FusedHit) -> FusedHit:
        if h.id in inside:
            return h
        return _scored(h, weights, time=after if h.id in told_after else factor)

    return best_first(timed(h) for h in fused)


def prefer_layers(fused: list[FusedHit], layers: dict[UUID, str], preference: dict[str, float]) -> list[FusedHit]:
    """Each score times its layer's preference (0..1); hits without a known layer are dropped."""
    out = []
    for h in fused:
        if h.id not in layers:
            continue
        layer = clip(preference.get(layers[h.id], 1.0))
        if layer != h.layer:
            h = h.model_copy(update={"layer": layer})
            h.score = score_of(h)
        out.append(h)
    return best_first(out)


def below_newer(fused: list[FusedHit], newer_of: dict[UUID, UUID], weights: Weights) -> list[FusedHit]:
    """A memory a newer one may have replaced (``newer_of``: older -> newer, both among ``fused``)
    ranks just below the newer one: the newer one answers what the older one answered (the older
    one's relevance is evidence of its own, channel ``older``), and the older one keeps at most
    BELOW_NEWER of the newer one's score (its ``standing``). Along a chain A -> B -> C relevance is
    lent oldest first and scores are capped newest first, so each ends below the next."""
    by_id = {h.id: h for h in fused}
    chains = {old: new for old, new in newer_of.items() if old in by_id and new in by_id and old != new}
    order = _oldest_first(chains)
    for old in order:
        older, newer = by_id[old], by_id[chains[old]]
        lent = round(max(newer.channels.older, older.relevance), 6)
        by_id[newer.id] = _scored(newer, weights, channels=newer.channels.model_copy(update={"older": lent}))
    for old in reversed(order):
        older, newer = by_id[old], by_id[chains[old]]
        ceiling = round(BELOW_NEWER * newer.score, 6)
        plain = older.relevance * older.time * older.layer
        standing = round(min(1.0, ceiling / plain), 6) if plain > 0 else 1.0
        older = older.model_copy(update={"standing": standing, "newer": newer.id})
        older.score = min(score_of(older), ceiling)
        by_id[old] = older
    # Scores are rounded to 6 places: where two tie, the order still says which is newer.
    return ordered_below_newer(best_first(by_id.values()), chains)


def ordered_below_newer(hits: list[FusedHit], newer_of: dict[UUID, UUID]) -> list[FusedHit]:
    """Whatever else reordered the hits (the latest first for "last time", time order for a
    question about a time), a memory a newer one may have replaced comes right after the newer one
    when both are there."""
    out = list(hits)
    for _ in range(len(out)):  # each pass settles one more; a chain is at most as long as the list
        position = {h.id: i for i, h in enumerate(out)}
        late = next(
            (i for i, h in enumerate(out) if newer_of.get(h.id) in position and position[newer_of[h.id]] > i), None
        )
        if late is None:
            return out
        older = out.pop(late)
        out.insert(position[newer_of[older.id]], older)  # just after it: it moved up by one
    return out


def _oldest_first(chains: dict[UUID, UUID]) -> list[UUID]:
    """The older memories of the chains, each before the ones that come after it (a cycle, which
    the write path never makes, is broken where it is entered)."""
    depth: dict[UUID, int] = {}
    for start in chains:
        path, node = [], start
        while node in chains and node not in depth and node not in path:
            path.append(node)
            node = chains[node]
        base = depth.get(node, -1)
        for offset, item in enumerate(reversed(path)):
            depth[item] = base + 1 + offset if node in depth else offset
    return sorted(chains, key=lambda old: -depth.get(old, 0))


def has_evidence(hit: FusedHit, window_named: bool = False) -> bool:
    """Evidence of its own: its meaning, its words, an identifier, the time the query named, or
    the memory it may replace (a neighbour's context is lent, not its own)."""
    c = hit.channels
    own = c.vector > 0 or c.retrieval > 0 or c.keyword > 0 or c.rule > 0 or c.older > 0
    return own or (window_named and hit.time >= 1.0)


def evidence_first(fused: list[FusedHit], window_named: bool = False) -> list[FusedHit]:
    """A memory whose only evidence is lent by its conversation neighbours never outranks one with
    evidence of its own: its score is capped at BELOW_NEWER of the weakest of those (its
    ``standing``), so context brings a neighbour in, and orders such neighbours among themselves,
    without pushing an answer down."""
    weakest = min((h.score for h in fused if h.score > 0 and has_evidence(h, window_named)), default=None)
    if weakest is None:
        return fused
    # Strictly below, even where rounding to 6 places would make 0.9 x a tiny score equal to it.
    ceiling = max(0.0, min(round(BELOW_NEWER * weakest, 6), round(weakest - 1e-6, 6)))
    out = []
    for h in fused:
        if h.score > ceiling and not has_evidence(h, window_named):
            plain = h.relevance * h.time * h.layer
            h = h.model_copy(update={"standing": round(min(h.standing, ceiling / plain), 6) if plain else h.standing})
            h.score = min(score_of(h), ceiling)
        out.append(h)
    return best_first(out)


def cut(fused: list[FusedHit], ratio: float, floor: float = 0.0) -> list[FusedHit]:
    """Drop hits without evidence (score 0: no shared word or identifier, a cosine at the noise
    level), hits far weaker than the best one (below ``ratio`` of its score) and any under an
    absolute ``floor`` (0 by default). Relative, so a question whose best evidence is weak still
    gets its best answers back, and one with a clear answer does not get noise padded after it."""
    if not fused:
        return []
    best = max(h.score for h in fused)
    return [h for h in fused if h.score > 0 and h.score >= floor and h.score >= ratio * best]


def latest_first(fused: list[FusedHit], times: dict[UUID, datetime], ratio: float) -> list[FusedHit]:
    """ "上次", "last time": among the matches (a score, or a vector evidence, within ``ratio`` of the
    best: a match in the other language shares no words, but means as much), the one that happened
    last comes first; the rest follow by score."""
    if not fused:
        return []
    best = max(h.score for h in fused)

    def meaning(h: FusedHit) -> float:  # either vector channel's evidence
        return max(h.channels.vector, h.channels.retrieval)

    best_vector = max(meaning(h) for h in fused)
    matches = [
        h
        for h in fused
        if h.id in times and (h.score >= ratio * best or (best_vector > 0 and meaning(h) >= ratio * best_vector))
    ]
    matches.sort(key=lambda h: (times[h.id], h.score), reverse=True)
    chosen = {h.id for h in matches}
    return matches + [h for h in fused if h.id not in chosen]
