"""The names a conversation calls its people by (domain/addressing.py): which uses of a name call someone, and
which names a conversation mostly calls rather than speaks of."""

from __future__ import annotations

import pytest
from agentmem.domain.addressing import called_names, calls, capitalised
from hypothesis import given
from hypothesis import strategies as st


@pytest.mark.parametrize(("text", "word"), [
    ("goodnight carla", "carla"),  # a greeting right before it
    ("hey Rosa!", "rosa"),
    ("Thanks, Caroline!", "caroline"),
    ("Hey Mel! Good to see you!", "mel"),
    ("Marek. Jurek died this morning.", "marek"),  # it opens the text, a mark after it
    ("Randi!!! I'm going to cry", "randi"),
    ("Rosa are you sure?", "rosa"),  # ... or the one it calls being spoken to
    ("ok. Lena, did you book it?", "lena"),  # it opens a sentence
    ("see you soon, Lena.", "lena"),  # it closes the text after a comma
    ("that was lovely, Sofia! talk soon", "sofia"),  # ... or a sentence
    ("that's great Rosa! sun!", "rosa"),  # an exclamation mark right after it, wherever it stands
    ("morning Rosa! yes sorry, gutters on Saturday", "rosa"),
    ("oh no Rosa. I'm so sorry", "rosa"),  # an interjection right before it
    ("well done Marek", "marek"),
    ("Rosa did you see the fence??", "rosa"),  # opening a sentence, the one it calls asked something
    ("ok. Lena could you send it", "lena"),
    ("Rosa 🥹 you don't have to", "rosa"),  # opening a sentence, an emoji after it
    ("Henrik 😂", "henrik"),
])
def test_a_name_said_to_someone_calls_them(text: str, word: str) -> None:
    assert calls(text, word)


@pytest.mark.parametrize(("text", "word"), [
    ("I told Carla about it", "carla"),  # spoken of
    ("I went with Caroline.", "caroline"),  # closing a sentence, but no comma before it
    ("Carla's dog ate a sock", "carla"),  # 's: spoken of
    ("Carla’s dog ate a sock", "carla"),
    ("Marek. Jurek died this morning.", "jurek"),  # opens a sentence, then a verb
    ("Jurek is in hospital. The heart.", "jurek"),
    ("rho = rho, AR.start = hourly$AR.start)", "ar"),  # a dot inside code is no sentence's end
    ("mutate(AR.start = row_number() == 1)", "ar"),
    ("Caroline", "rosa"),  # not there at all
    ("Rosalind was here", "rosa"),  # a longer word is not the name
    ("Rosa could fix it", "rosa"),  # opening a sentence, a verb that asks nobody
    ("Rosa-Maria came round", "rosa"),  # a dash, a quote, a bracket or an ampersand after it is no call
    ("Rosa — my neighbour — came round", "rosa"),
    ("Rosa (next door) has hens", "rosa"),
    ("Rosa & Walt built it", "rosa"),
    ("\u201cRosa\u201d is on the parcel", "rosa"),
    ("no Rosalind!", "rosa"),  # the exclamation mark after a longer word
    ("Trondheim!! that's Norway!!", "norway"),  # ... or after a stop word
    ("a friend for Mochi!! a little one", "mochi"),
    ("we drove to Great Yarmouth.", "yarmouth"),  # "great" names places and books; it calls nobody
    ("she lent me The Great Gatsby.", "gatsby"),
])
def test_a_name_spoken_of_or_not_there_calls_nobody(text: str, word: str) -> None:
    assert not calls(text, word)


def test_the_words_a_question_writes_with_a_capital_are_read_lower_cased_without_stop_words() -> None:
    assert capitalised("What did Carla's dog swallow at the Stone Church? When did Rosa leave?") == \
        ["carla", "stone", "church", "rosa"]
    assert capitalised("what did rosa decide") == []
    # a word that opens the query or one of its sentences has its capital for that
    assert capitalised("Budget for the trip? Rosa said. Then Kwame: ok") == ["kwame"]
    assert capitalised("Rosa's hens: which went off laying?") == []
    many = "and " + " ".join(f"Name{n}" for n in range(100))  # a query of capitalised words: its first few
    assert capitalised(many) == [f"name{n}" for n in range(8)] and capitalised(many, most=2) == ["name0", "name1"]
    assert capitalised("Was it in São Paulo or İzmir?") == ["são", "paulo", "i̇zmir"]


def test_a_name_mostly_called_is_found_and_one_mostly_spoken_of_is_not() -> None:
    messages = [
        ("assistant", "hey Rosa!"), ("assistant", "Rosa are you sure?"), ("assistant", "goodnight Rosa"),
        ("user", "Aisling. she's a vet nurse"),  # called once ...
        ("user", "Aisling knows already"), ("user", "that was Aisling's cooking"),  # ... spoken of twice
        ("assistant", "I did it for Rosa, she loved it"),  # Rosa spoken of once: still 3 calls of 4
    ]
    assert called_names(["rosa", "aisling", "nobody"], messages) == {"rosa"}


def test_a_name_called_in_the_many_ways_people_chat_is_found() -> None:
    # Kwame's lines that hold Rosa's name: seven call her, one speaks of her
    messages = [
        ("assistant", "morning Rosa! yes sorry, gutters on Saturday"), ("assistant", "Rosa did you see the fence??"),
        ("assistant", "oh no Rosa. I'm so sorry"), ("assistant", "Rosa 🥹 you don't have to"),
        ("assistant", "Rosa!! she's here! born Monday night"), ("assistant", "that's great Rosa! sun!"),
        ("assistant", "Rosa are you sure?"), ("assistant", "my mother says Rosa's pie is the best"),
    ]
    assert sum(calls(text, "rosa") for _, text in messages) == 7
    assert called_names(["rosa"], messages) == {"rosa"}
    # and a name spoken of at the end of a sentence, or with a dash after it, is not
    spoken_of = [("user", "I went with Caroline."), ("user", "Caroline-style pasta again"),
                 ("user", "Caroline could come too"), ("assistant", "hey Caroline!")]
    assert called_names(["caroline"], spoken_of) == set()


def test_one_call_is_not_enough_and_half_is() -> None:
    once = [("user", "hey Lena!"), ("user", "the tram was late")]
    assert called_names(["lena"], once) == set()
    half = [("user", "hey Lena!"), ("assistant", "bye Lena"), ("user", "Lena said no"), ("user", "Lena went home")]
    assert called_names(["lena"], half) == {"lena"}
    less = [*half, ("user", "I saw Lena today")]
    assert called_names(["lena"], less) == set()


def test_tool_rows_call_nobody_and_count_for_nothing() -> None:
    rows = [("tool_result", "Status: ok"), ("tool_call", "Status!"), ("tool_result", "Status, then")]
    assert called_names(["status"], rows) == set()
    assert called_names(["status"], [*rows, ("user", "Status?"), ("assistant", "hey Status")]) == {"status"}


@given(st.lists(st.tuples(st.sampled_from(["user", "assistant", "tool_result"]), st.text(max_size=80)),
                max_size=12),
       st.lists(st.text(alphabet="abcRos İı'’!,. ", min_size=1, max_size=8), max_size=4))
def test_called_names_are_always_some_of_the_candidates(messages: list[tuple[str, str]], words: list[str]) -> None:
    found = called_names(words, messages)
    assert found <= set(words)
    for word in found:
        assert sum(1 for role, text in messages if role in ("user", "assistant") and calls(text, word)) >= 2


def test_a_call_deep_inside_a_long_message_is_read_by_what_is_near_it() -> None:
    long = "We went through the whole plan again and nothing changed. " * 200
    assert calls(long + "Thanks, Rosa!", "rosa")
    assert calls(long + "Rosa, are you coming?", "rosa")
    assert not calls(long + "I told Rosa about it.", "rosa")
    assert not calls("Rosa" + ("x" * 100) + " and more", "rosa")  # not the word


def test_a_name_is_read_in_the_first_messages_holding_it_best_first() -> None:
    from agentmem.domain.addressing import CALLED_SAMPLE

    calling = [("assistant", "hey Rosa!")] * CALLED_SAMPLE
    speaking_of = [("user", "I met Rosa at the market")] * (2 * CALLED_SAMPLE)
    assert called_names(["rosa"], calling + speaking_of) == {"rosa"}
    assert called_names(["rosa"], speaking_of + calling) == set()


def test_a_long_message_is_read_for_calls_at_its_edges() -> None:
    from agentmem.domain.addressing import EDGE

    middle = "We went through the whole plan again and nothing changed. " * 20
    assert calls("Hey Rosa! " + middle, "rosa") and calls(middle + " see you soon, Rosa.", "rosa")
    assert not calls(middle[: EDGE + 10] + " Rosa, are you coming? " + middle, "rosa")  # deep inside: not read
    cut = "x" * (EDGE - 9) + " hey Rosalind " + middle  # a longer word cut at the edge is not the name
    assert cut.lower().index("rosa") + len("rosa") == EDGE and not calls(cut, "rosa")
