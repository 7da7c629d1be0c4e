from engram.domain.text import duplicate_key, guess_language, is_conversation, normalise


def test_normalise_folds_case_width_and_spaces():
    assert normalise("  I  like\tＣoffee ") == "i like coffee"


def test_duplicate_key_ignores_case_and_spacing_but_not_scope():
    a = duplicate_key("I like coffee", "long_term", None)
    assert a == duplicate_key("i like  COFFEE", "long_term", None)
    assert a != duplicate_key("I like coffee", "session", "s1")
    assert duplicate_key("x", "session", "s1") != duplicate_key("x", "session", "s2")


def test_language_guess():
    assert guess_language("用户偏好顺丰快递") == "zh"
    assert guess_language("The user likes tea") == "en"
    assert guess_language("我喜欢 coffee") == "zh"
    assert guess_language("12345") == "und"


def test_a_conversation_is_told_from_a_question():
    assert not is_conversation("what did I buy last week")
    assert is_conversation("Bart: I'm performing tonight!\nAssistant: Great!")
    assert is_conversation("I told you about it " * 10)
