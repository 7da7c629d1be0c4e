"""engram's own generated evaluation sets (service/engram/evaluation/generated.py). The long
histories come out the same on every run. Their gold turns exist, the histories are long, an
update's gold is the later statement, and filler comes only from the user's own LoCoMo split. The
paraphrases reword facts that exist."""

import json
import re
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from engram.errors import InvalidInput
from engram.evaluation import datasets
from engram.evaluation.datasets import EvalCorpus, EvalMemory
from engram.evaluation.generated import CATEGORIES, FILLER_CONVERSATIONS

REPO = Path(__file__).resolve().parents[2]
OWN = REPO / "tests" / "data"
ROOT = REPO.parent / "shared" / "data"
LOCOMO = ROOT / "locomo" / "locomo10.json"
STORIES = json.loads((OWN / "longhistory.json").read_text(encoding="utf-8"))
USERS = {user["user"]: user for user in STORIES["users"]}


def _json_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def corpus() -> EvalCorpus:
    if not LOCOMO.is_file():
        pytest.skip(f"no LoCoMo at {LOCOMO}: the long histories take their filler from it")
    return datasets.load("longhistory", ROOT, OWN)


def _needles(corpus: EvalCorpus) -> dict[str, EvalMemory]:
    """ "story/needle" -> the memory holding that needle, found by its text."""
    by_content = {m.content: m for group in corpus.groups for m in group.memories}
    return {
        f"{story['id']}/{needle['id']}": by_content[
            f"{user['name']}: {needle['text'].replace('{friend}', user['friend'])}"
        ]
        for user in USERS.values()
        for story in user["stories"]
        for needle in story["needles"]
    }


def _words(text: str) -> str:
    """A turn's lowercase words, without the capitalised ones (names) that the loader replaces."""
    return " ".join(w for w in re.findall(r"[A-Za-z']+", text) if not w[0].isupper()).lower()


def _locomo_turns(conversations: range) -> set[str]:
    samples = json.loads(LOCOMO.read_text())
    turns = set()
    for index in conversations:
        conversation = samples[index]["conversation"]
        for key in (k for k in conversation if re.fullmatch(r"session_\d+", k)):
            for turn in conversation[key]:
                caption = f" (shares a photo: {turn['blip_caption']})" if turn.get("blip_caption") else ""
                turns.add(_words(turn["text"] + caption))
    return turns


def test_the_stories_are_many_varied_and_each_belongs_to_one_user():
    stories = [story for user in USERS.values() for story in user["stories"]]
    questions = [q for story in stories for q in story["questions"]]
    assert len(stories) >= 40 and len(questions) >= 80
    assert {q["category"] for q in questions} == set(CATEGORIES)
    assert len({story["id"] for story in stories}) == len(stories)
    assert sorted(user["split"] for user in USERS.values()) == ["dev"] * 3 + ["test"] * 3
    for story in stories:
        assert 1 <= len(story["questions"]) <= 2, story["id"]
        for needle in story["needles"]:
            assert 40 <= len(needle["text"]) <= 400, (story["id"], needle["id"])
            assert ("at" in needle) != ("days_ago" in needle), (story["id"], needle["id"])
        for question in story["questions"]:
            assert set(question["gold"]) <= {n["id"] for n in story["needles"]}, story["id"]


def test_longhistory_is_the_same_on_every_run(corpus):
    again = datasets.load("longhistory", ROOT, OWN)
    assert again.groups == corpus.groups
    assert [g.key for g in corpus.groups] == list(USERS)


def test_every_gold_id_is_a_memory_of_the_user_asked(corpus):
    for group in corpus.groups:
        ids = [m.external_id for m in group.memories]
        assert len(ids) == len(set(ids)), group.key
        for question in group.questions:
            assert question.gold and question.gold <= set(ids), question.id
            assert question.asked_at == datetime.fromisoformat(STORIES["now"])
    assert corpus.questions == sum(len(s["questions"]) for u in USERS.values() for s in u["stories"])


def test_every_user_has_hundreds_of_turns_over_a_year_of_sessions(corpus):
    now = datetime.fromisoformat(STORIES["now"])
    for group in corpus.groups:
        assert 500 <= len(group.memories) <= 700, (group.key, len(group.memories))
        sessions = {m.conversation: m.tags for m in group.memories}
        assert 25 <= len(sessions) <= 30, group.key
        assert all(conversation == f"{group.key}/{tags[0]}" for conversation, tags in sessions.items())
        dates = [m.occurred_at for m in group.memories if m.occurred_at]
        assert len(dates) == len(group.memories) and dates == sorted(dates)
        assert now - timedelta(days=366) < dates[0] and dates[-1] < now


def test_needles_sit_inside_their_sessions_on_their_days(corpus):
    now = datetime.fromisoformat(STORIES["now"])
    first = {m.conversation: m.external_id for group in corpus.groups for m in reversed(group.memories)}
    needles = _needles(corpus)
    for key, memory in needles.items():
        assert memory.external_id != first[memory.conversation], key
    for user in USERS.values():
        for story in user["stories"]:
            for needle in (n for n in story["needles"] if "days_ago" in n):
                when = needles[f"{story['id']}/{needle['id']}"].occurred_at
                assert when and when.date() == (now - timedelta(days=needle["days_ago"])).date(), story["id"]


def test_an_update_is_gold_and_what_it_replaced_is_not(corpus):
    needles = _needles(corpus)
    updates = 0
    for user in USERS.values():
        [group] = [g for g in corpus.groups if g.key == user["user"]]
        asked = {q.id: q for q in group.questions}
        for story in user["stories"]:
            for number, question in enumerate(story["questions"]):
                if question["category"] != "update":
                    continue
                updates += 1
                [latest] = [needles[f"{story['id']}/{g}"] for g in question["gold"]]
                assert asked[f"{story['id']}#{number}"].gold == {latest.external_id}
                earlier = [
                    needles[f"{story['id']}/{n['id']}"] for n in story["needles"] if n["id"] not in question["gold"]
                ]
                assert earlier, story["id"]  # an update needs something it replaces
                for old in earlier:
                    assert old.occurred_at and latest.occurred_at and old.occurred_at < latest.occurred_at, story["id"]
    assert updates >= 10


def test_dev_and_test_users_take_filler_from_disjoint_locomo_conversations(corpus):
    assert not set(FILLER_CONVERSATIONS["dev"]) & set(FILLER_CONVERSATIONS["test"])
    turns = {split: _locomo_turns(conversations) for split, conversations in FILLER_CONVERSATIONS.items()}
    needles = {(m.conversation, m.external_id) for m in _needles(corpus).values()}  # ids repeat across users
    for group in corpus.groups:
        other = "test" if group.split == "dev" else "dev"
        filler = [
            _words(m.content.split(": ", 1)[1])
            for m in group.memories
            if (m.conversation, m.external_id) not in needles
        ]
        assert all(text in turns[group.split] for text in filler), group.key
        # Short turns ("Thanks!") are in both splits. Most turns are in only one, so the check above has teeth.
        assert sum(text not in turns[other] for text in filler) > 0.9 * len(filler), group.key


def test_filler_speaks_as_the_user_and_the_friend(corpus):
    for group in corpus.groups:
        user = USERS[group.key]
        speakers = {m.content.split(": ", 1)[0] for m in group.memories}
        assert speakers == {user["name"], user["friend"]}, group.key


def test_every_paraphrase_rewords_a_crosslingual_fact():
    facts = {item["id"]: item for item in _json_lines(OWN / "crosslingual.jsonl")}
    rows = _json_lines(OWN / "paraphrase.jsonl")
    assert sorted(row["id"] for row in rows) == sorted(facts)
    for row in rows:
        for language in ("en", "zh"):
            asked = row[f"q_{language}"]
            assert len(asked) == 2 and len(set(asked)) == 2, row["id"]
            assert facts[row["id"]][f"q_{language}"] not in asked, row["id"]


def test_paraphrase_asks_each_language_within_itself():
    corpus = datasets.load("paraphrase", Path("unused"), OWN)
    assert [(g.key, g.split) for g in corpus.groups] == [("en", "none"), ("zh", "none")]
    for group in corpus.groups:
        assert len(group.memories) == 60 and len(group.questions) == 120
        ids = {m.external_id for m in group.memories}
        for question in group.questions:
            assert question.category == group.key
            assert len(question.gold) == 1 and question.gold <= ids
    chinese = [m.content for m in corpus.groups[1].memories]
    assert all(re.search(r"[\u4e00-\u9fff]", text) for text in chinese)


def test_the_new_sets_are_in_the_default_list_and_fail_clearly_without_their_data(tmp_path):
    assert {"longhistory", "paraphrase"} <= {*datasets.LOADERS, *datasets.OWN}
    with pytest.raises(InvalidInput, match="no benchmark data"):
        datasets.load("longhistory", tmp_path / "absent", OWN)
    with pytest.raises(InvalidInput, match=r"paraphrase\.jsonl not found"):
        datasets.load("paraphrase", ROOT, tmp_path)
    with pytest.raises(InvalidInput, match=r"longhistory\.json not found"):
        datasets.load("longhistory", ROOT, tmp_path)
