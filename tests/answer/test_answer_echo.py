"""Whether an answer only restates the question (``ragstream.answer.echo``): pure functions, no model."""

from __future__ import annotations

import pytest

from ragstream.answer.echo import may_still_restate, restates_question

CLAIM = "The HSV-2 infection is typically asymptomatic."


@pytest.mark.parametrize("answer", [
    "The HSV-2 infection is asymptomatic.",                       # SciFact claim 1168, the packaged Qwen's answer
    "The HSV-2 infection is typically asymptomatic. [1]",
    "HSV-2 infections are typically asymptomatic [2]. The infection is asymptomatic.",
    "The HSV-2 infection is asymptomatic.\n\n```python\nprint('asymptomatic infection')\n```",  # code is not prose
])
def test_restatements_of_the_question(answer: str):
    assert restates_question(answer, CLAIM, 0.8)


@pytest.mark.parametrize("answer", [
    "Most HSV-2 infections go unrecognised: 80% of seropositive adults reported no genital lesions [1].",
    "The HSV-2 infection is asymptomatic. Serology found antibodies in 22% of adults without any history [2].",
    "Yes [1].",                                                   # nothing but a stopword: not a restatement
    "",
])
def test_answers_that_say_more(answer: str):
    assert not restates_question(answer, CLAIM, 0.8)


def test_the_share_decides():
    answer = "The HSV-2 infection is mostly asymptomatic."  # 'mostly' is new: 3 of 4 content words asked
    assert restates_question(answer, CLAIM, 0.75) and not restates_question(answer, CLAIM, 0.8)


def test_a_streamed_answer_is_undecided_until_it_says_more():
    assert may_still_restate("", CLAIM, 0.8)
    assert may_still_restate("[1", CLAIM, 0.8)
    assert may_still_restate("The HSV-2 infec", CLAIM, 0.8)  # a word cut mid-way still matches the question's by prefix
    assert not may_still_restate("The HSV-2 infection is rarely noticed", CLAIM, 0.8)
