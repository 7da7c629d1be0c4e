"""How a new statement relates to a stored one, by rules: claims, slots, changes, near-misses."""

import pytest

from engram.domain.claims import read_claim, strip_filler
from engram.domain.judgement import Relation
from engram.domain.numbers import numbers_of
from engram.domain.relations import relate_statements

SAME, SUPPLEMENT, CONFLICT, DIFFERENT = Relation.same, Relation.supplement, Relation.conflict, Relation.different


@pytest.mark.parametrize(
    ("existing", "new", "relation"),
    [
        # paraphrases, in other words and across languages
        ("I like coffee", "I really like coffee", SAME),
        ("I like drinking americano", "Oh and I really like americano coffee", SAME),
        ("I like drinking americano", "The user enjoys drinking Americanos", SAME),
        ("我喜欢喝美式", "用户喜欢喝美式咖啡", SAME),
        ("I like Americano", "我喜欢喝美式", SAME),
        ("我喜欢猫", "I like cats", SAME),
        ("I like tea", "I switched from coffee to tea", SAME),
        # details
        ("I like americano", "I like americano without sugar", SUPPLEMENT),
        # changes, with and without shared words, across languages
        ("I like coffee", "I switched to tea", CONFLICT),
        ("我喜欢喝咖啡", "我现在改喝茶了", CONFLICT),
        ("I like Americano", "我现在不喝咖啡了，改喝茶", CONFLICT),
        ("I drink coffee every morning", "I switched from coffee to tea", CONFLICT),
        ("I like Americano", "I switched from coffee to tea", CONFLICT),
        ("我喜欢喝美式", "我最近从咖啡换成了茶", CONFLICT),
        ("I live in Hangzhou", "I moved to Shanghai", CONFLICT),
        ("I live in Hangzhou", "I live in Shanghai", CONFLICT),
        ("我住在杭州", "我从杭州搬到了上海", CONFLICT),
        ("I eat meat", "I don't eat meat", CONFLICT),
        ("I prefer email over phone calls", "I prefer phone calls over email", CONFLICT),
        # a new value without digits is a new value, never a repeat
        (
            "The wifi password for the office is kqzvmwhtrplxbnfd",
            "The wifi password for the office is ajsueoxmcyrwlgqt",
            CONFLICT,
        ),
        ("My phone number is 13800001111", "My phone number is 13900002222", CONFLICT),
        # near-misses: another subject, another attribute, another number, another thing
        ("I like cats", "My sister likes cats", DIFFERENT),
        ("My sister likes cats", "I like cats", DIFFERENT),
        ("Alice likes cats", "Bob likes cats", DIFFERENT),
        ("张三喜欢猫", "李四喜欢猫", DIFFERENT),
        ("我的上司是张三", "我的下属是张三", DIFFERENT),
        ("我们公司有六千人", "我们公司有六百人", DIFFERENT),
        ("他本科毕业", "他专科毕业", DIFFERENT),
        ("He likes cats", "She likes cats", DIFFERENT),
        ("他喜欢猫", "她喜欢猫", DIFFERENT),
        ("He lives in Hangzhou", "He lives in Shanghai", DIFFERENT),  # perhaps not the same "he"
        ("My order 12345 was delayed", "My order 12346 was delayed", DIFFERENT),
        ("I like cats", "I like dogs", DIFFERENT),
        ("I play tennis", "I watch tennis on TV", DIFFERENT),
        ("Over a year", "I'm so glad your application has been approved!", DIFFERENT),
        # a plan to change moves nobody yet
        ("用户住在杭州西湖附近", "用户正在攒钱买房", DIFFERENT),
        ("I live in Hangzhou", "I'm saving up to buy a house", DIFFERENT),
        ("I live in Hangzhou", "I want to move to Shanghai", DIFFERENT),
        ("用户正在攒钱买房", "用户下个月要搬到深圳", DIFFERENT),  # two plans
        ("我叔叔住在北京", "我舅舅住在上海", DIFFERENT),  # two uncles
        ("My older sister lives in Boston", "My younger sister lives in Denver", DIFFERENT),
        ("我哥哥在银行上班", "我弟弟在学校上班", DIFFERENT),
        ("The user is saving money to buy an apartment", "The user's apartment is on the twelfth floor", DIFFERENT),
        ("The user goes swimming every Saturday", "The user broke their left arm skiing last winter", DIFFERENT),
    ],
)
def test_relations(existing, new, relation):
    assert relate_statements(new, existing).relation == relation


def test_a_claim_names_subject_slot_values_and_change():
    change = read_claim("我现在不喝咖啡了，改喝茶")
    assert (change.subject.key, change.attribute, change.change) == ("user", "beverage", True)
    assert change.old_values == {"coffee"} and change.new_values == {"tea"}
    sister = read_claim("My sister likes cats")
    assert (sister.subject.key, sister.slot, sister.values) == ("user/sister", "user/sister|pet", {"cat"})
    password = read_claim("The wifi password for the office is kqzvmwhtrplxbnfd")
    assert password.single and password.values == {"kqzvmwhtrplxbnfd"}


def test_filler_is_stripped():
    assert strip_filler("Oh and I really like americano coffee lol") == "I really like americano coffee"
    assert strip_filler("对了，我喜欢喝美式哈哈") == "我喜欢喝美式"
    assert strip_filler("ok") == "ok"  # nothing but filler: left as it is


def test_chinese_numbers_count():
    assert numbers_of("我们公司有六千人") == {"6000"} and numbers_of("六百人") == {"600"}
    assert numbers_of("我有两只猫和三个孩子") == {"2", "3"}
    assert numbers_of("我们一起去") == frozenset()  # "一起" is not a number
    assert numbers_of("一万二千五百元") == {"12500"}
