import pytest

from engram.domain.judgement import Turn
from engram.domain.models import Layer, MemoryType
from engram.domain.utterance import sentences
from engram.judge.rules import RuleJudge

judge = RuleJudge()


async def facts(text: str, **turn):
    return [(f.content, f.type) for f in (await judge.judge_turn(Turn(user=text, **turn))).facts]


def test_sentences_split_on_chinese_and_english_punctuation():
    assert sentences("我喜欢喝美式。我对花生过敏！Hi. I like tea") == [
        "我喜欢喝美式",
        "我对花生过敏",
        "Hi",
        "I like tea",
    ]


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("我喜欢喝美式", [("我喜欢喝美式", MemoryType.preference)]),
        ("I prefer window seats", [("I prefer window seats", MemoryType.preference)]),
        ("提醒我明天交报告", [("提醒我明天交报告", MemoryType.task)]),
        ("Remind me to call mom tomorrow", [("Remind me to call mom tomorrow", MemoryType.task)]),
        ("我上周去了杭州", [("我上周去了杭州", MemoryType.event)]),
        ("I visited Kyoto last year", [("I visited Kyoto last year", MemoryType.event)]),
        ("My sister is a doctor", [("My sister is a doctor", MemoryType.fact)]),
        ("你好！谢谢", []),
        ("Hello! What's the time?", []),
        ("我现在好困", []),
        ("I'm so hungry right now", []),
        ("这个别记：我的工资是5000", []),
        ("The sky is blue", []),  # not about the user
    ],
)
async def test_turns(said, expected):
    assert await facts(said) == expected


async def test_importance_rises_for_health_and_explicit_requests_and_falls_for_hedges():
    judged = (await judge.judge_turn(Turn(user="Remember that I am allergic to penicillin. Maybe I like jazz"))).facts
    allergy, jazz = judged
    assert allergy.importance > 0.8 and jazz.importance < 0.5


async def test_layers_follow_the_turn():
    [task] = (await judge.judge_turn(Turn(user="I need to book the venue", task_id="t-1"))).facts
    assert task.layer == Layer.task
    [session] = (
        await judge.judge_turn(Turn(user="For this conversation I prefer short answers", session_id="s"))
    ).facts
    assert session.layer == Layer.session
