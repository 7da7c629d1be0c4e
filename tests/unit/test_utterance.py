"""A turn is cut into statements made of its words: never a word cut, never a word moved, filler
only as whole words, and a clause split off only when it stands alone. Property-tested over
generated sentences and over every turn of LoCoMo and MADial-Bench."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.domain.perspective import in_third_person
from engram.domain.utterance import clauses, statements, strip_filler
from tests import corpora
from tests.words_kept import first_person_only, whole_run

# Words that begin like filler ("So", "And", "Oh", "Um", "Well", "Yes", "Right", "Ok"), filler
# itself, and Chinese words that end or start like particles ("酒吧", "那个人").
NAMES = [
    "Sophie",
    "Andrew",
    "Ohio",
    "Umberto",
    "Wellington",
    "Yesterday",
    "Yesenia",
    "Right-handed",
    "Oklahoma",
    "Alston",
    "Justin",
    "Anderson",
    "Hmmm",
    "Ahmed",
    "Btwn",
    "Fyodor",
    "Actually",
]
FILLER = [
    "Oh",
    "oh and",
    "So",
    "Also,",
    "btw",
    "Well,",
    "Right,",
    "um",
    "Okay so",
    "yeah",
    "lol",
    "haha",
    "对了，",
    "嗯",
    "其实",
    "哈哈",
    "那个，",
    "还有，",
]
WORDS = [
    "I",
    "my",
    "sister",
    "lives",
    "in",
    "Berlin",
    "love",
    "coffee",
    "two",
    "cups",
    "every",
    "morning",
    "it",
    "we",
    "moved",
    "to",
    "Paris",
    "she",
    "plays",
    "piano",
    "and",
    "but",
    "so",
    "too",
    "when",
    "was",
    "a",
    "kid",
    "我",
    "喜欢",
    "喝",
    "咖啡",
    "每天",
    "早上",
    "两杯",
    "我妈",
    "住在",
    "北京",
    "去了",
    "酒吧",
    "那个人",
    "是",
    "我哥",
    "话说回来",
    "还有一只猫",
    "也",
    "吧",
    "啊",
    "呢",
]
PUNCT = [" ", " ", " ", ", ", "，", ". ", "。", "! ", "? ", "; ", "！", "~", ""]

token = st.sampled_from(NAMES + FILLER + WORDS)
turn = st.lists(st.tuples(token, st.sampled_from(PUNCT)), min_size=1, max_size=14).map(
    lambda pairs: "".join(w + p for w, p in pairs)
)


@settings(max_examples=3000, deadline=None)
@given(turn)
def test_every_statement_is_a_run_of_whole_words_of_the_turn(said):
    for statement in statements(said):
        assert whole_run(said, statement), (said, statement)


@settings(max_examples=1000, deadline=None)
@given(st.text(max_size=80))
def test_splitting_never_raises_and_keeps_whole_words_of_any_text(said):
    for statement in statements(said):
        assert statement.strip() and whole_run(said, statement), (said, statement)


@pytest.mark.skipif(corpora.missing() is not None, reason=str(corpora.missing()))
def test_every_turn_of_the_real_corpora_keeps_its_words():
    said = corpora.turns()
    violations = [(t, s) for t in said for s in statements(t) if not whole_run(t, s)]
    assert len(said) > 9000
    assert violations == [], f"{len(violations)} statements cut a word, e.g. {violations[:3]}"


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        (
            "Yesterday I went hiking in the Alps with my sister Mia.",
            "Yesterday I went hiking in the Alps with my sister Mia",
        ),
        ("Sophie is my daughter.", "Sophie is my daughter"),
        ("Andrew got promoted", "Andrew got promoted"),
        ("Ohio is where I grew up", "Ohio is where I grew up"),
        ("Wellington is windy", "Wellington is windy"),
        ("Also, Umberto is my boss", "Umberto is my boss"),
        ("Right-handed people are the majority", "Right-handed people are the majority"),
        ("Oh and I really like americano coffee lol", "I really like americano coffee"),
        ("So I moved to Berlin", "I moved to Berlin"),
        ("Right, I moved to Berlin", "I moved to Berlin"),
        ("Carol is my friend lol", "Carol is my friend"),
        ("对了，我喜欢喝美式哈哈", "我喜欢喝美式"),
        ("昨晚我去了酒吧", "昨晚我去了酒吧"),
        ("那个人是我哥", "那个人是我哥"),
        ("那个，我搬家了", "我搬家了"),
        ("还有一只猫叫咪咪", "还有一只猫叫咪咪"),
        ("话说回来我还是喜欢茶", "话说回来我还是喜欢茶"),
        ("ok", "ok"),  # nothing but filler: left as it is
    ],
)
def test_filler_goes_as_whole_words_only(said, kept):
    assert strip_filler(said) == kept


@pytest.mark.parametrize(
    ("said", "parts"),
    [
        ("Mr. Smith is my doctor", ["Mr. Smith is my doctor"]),
        ("I moved to St. Louis. I love it", ["I moved to St. Louis", "I love it"]),
        ("My appointment is at 3 p.m. tomorrow", ["My appointment is at 3 p.m. tomorrow"]),
        ("We moved to the U.S.", ["We moved to the U.S."]),
        ("Well, I think so lol", ["I think so"]),  # "Well" alone states nothing
        ("哈哈", []),
    ],
)
def test_sentences_end_at_sentences_not_at_abbreviations(said, parts):
    assert statements(said) == parts


@pytest.mark.parametrize(
    ("said", "parts"),
    [
        ("I moved to Berlin, I work at Siemens now", ["I moved to Berlin", "I work at Siemens now"]),
        ("我喜欢喝咖啡，我老婆喜欢喝茶", ["我喜欢喝咖啡", "我老婆喜欢喝茶"]),
        # what the second clause needs is in the first: not split
        ("I love coffee, I drink two cups every morning", ["I love coffee, I drink two cups every morning"]),
        ("I love coffee, I drink it every morning", ["I love coffee, I drink it every morning"]),
        ("I love jazz, my wife does too", ["I love jazz, my wife does too"]),
        ("Sophie likes jazz, she plays piano", ["Sophie likes jazz, she plays piano"]),
        ("When I was a kid, I lived in Ohio", ["When I was a kid, I lived in Ohio"]),
        ("我妈喜欢跳舞，我也喜欢", ["我妈喜欢跳舞，我也喜欢"]),
        (
            "I drink two cups of coffee a day, I run every evening",
            ["I drink two cups of coffee a day", "I run every evening"],
        ),
    ],
)
def test_a_clause_is_split_off_only_when_it_stands_alone(said, parts):
    assert [p for p in clauses(said)] == parts


@settings(max_examples=2000, deadline=None)
@given(turn)
def test_a_stored_fact_is_the_statement_with_only_its_first_person_rewritten(said):
    for statement in statements(said):
        assert first_person_only(statement, in_third_person(statement)), (statement, in_third_person(statement))


@pytest.mark.skipif(corpora.missing() is not None, reason=str(corpora.missing()))
def test_every_statement_of_the_real_corpora_keeps_its_words_in_the_third_person():
    checked = [(s, in_third_person(s)) for t in corpora.turns() for s in statements(t)]
    violations = [(s, stored) for s, stored in checked if not first_person_only(s, stored)]
    assert sum(s != stored for s, stored in checked) > 5000  # most statements say "I" somewhere
    assert violations == [], f"{len(violations)} of {len(checked)} changed more than the person: {violations[:3]}"


_ABBREVIATED = re.compile(r"\b(?:Mr|St|Dr|p\.m|U\.S|J)$")


@settings(max_examples=2000, deadline=None)
@given(turn)
def test_an_abbreviation_keeps_its_dot_and_ends_no_sentence(said):
    for statement in statements(said):
        assert not _ABBREVIATED.search(statement), (said, statement)


@pytest.mark.parametrize(
    ("said", "stored"),
    [
        ("I love coffee", "The user loves coffee"),
        ("I don't like my parents' house", "The user doesn't like the user's parents' house"),
        ("I'd rather stay home", "The user would rather stay home"),
        ("Oh my, I love it", "Oh my, the user loves it"),
        ("I/O is slow for me", "I/O is slow for the user"),
        ("自我介绍一下，我是小明", "自我介绍一下，用户是小明"),
        ("我国的高铁很快", "我国的高铁很快"),
        ("I'm allergic to my cat", "The user is allergic to the user's cat"),
        ("I don't eat meat", "The user doesn't eat meat"),
        ("I usually go to bed at 11", "The user usually goes to bed at 11"),
        ("I went hiking with my sister Mia", "The user went hiking with the user's sister Mia"),
        ("I'd like tea", "The user would like tea"),
        ('She told me "I love you"', 'She told the user "I love you"'),  # quoted words stay
        ("Caroline: I went to a support group", "Caroline: I went to a support group"),  # a speaker's line
        ("我很喜欢我的猫", "用户很喜欢用户的猫"),
        ("我妈住在海淀", "用户的妈住在海淀"),
        ("我们去了北京", "我们去了北京"),  # we: the user with others
        ("The user prefers tea", "The user prefers tea"),
    ],
)
def test_the_first_person_is_the_user(said, stored):
    assert in_third_person(said) == stored
