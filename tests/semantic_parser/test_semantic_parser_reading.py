"""Reading questions: results in order, unreadable questions with a clear reason, and questions
given the parser's programs in place of their own."""
import pytest

from nablafol.data import Question
from nablafol.dsl import parse_program
from nablafol.semantic_parser import (ParserError, UnreadableQuestionError, same_program, with_predicted_programs,
                                      without_ids)
from nablafol.semantic_parser.predicted_programs import parser_error


@pytest.mark.slow
def test_parse_many_keeps_the_order_and_puts_unreadable_questions_in_place(trained):
    parser, _ = trained
    questions = ["What color is the cup?", "", "Is the dog red?", "... ?"]
    results = parser.parse_many(questions, batch_size=2)
    assert [type(r).__name__ for r in results] == ["ParsedQuestion", "UnreadableQuestionError",
                                                   "ParsedQuestion", "UnreadableQuestionError"]
    assert results[0].question == questions[0] and results[2].question == questions[2]
    assert results[1].reason == "it has no words"
    for result in (results[0], results[2]):
        assert parse_program(result.text) == result.program  # the text is the program, written as GQA writes it
        assert 0 < result.probability <= 1


@pytest.mark.slow
def test_a_question_longer_than_the_parser_reads_is_unreadable(trained):
    parser, _ = trained
    with pytest.raises(UnreadableQuestionError, match=f"more than the {parser.max_question_words}"):
        parser.parse("is the cup red " * parser.max_question_words)


@pytest.mark.slow
def test_a_program_read_with_too_little_confidence_is_refused_with_the_closest_guess(trained):
    parser, _ = trained
    read = parser.parse("Is the cup red?")
    with pytest.raises(UnreadableQuestionError) as caught:
        parser.parse("Is the cup red?", min_probability=min(1.0, read.probability * 1.01 + 1e-9))
    assert caught.value.guess == read.text and "below" in caught.value.reason
    assert parser.parse("Is the cup red?", min_probability=read.probability * 0.99).text == read.text


@pytest.mark.slow
def test_parse_refuses_what_is_not_text(trained):
    parser, _ = trained
    with pytest.raises(ParserError):
        parser.parse_many("Is the cup red?")
    with pytest.raises(ParserError):
        parser.parse_many([3])


@pytest.mark.slow
def test_with_predicted_programs_replaces_the_programs_and_keeps_the_gold_line(trained):
    parser, _ = trained
    gold = Question("a", "1", "Is the cup red?", "no", None, "select: cup (12)->verify color: red [0]")
    given_list = Question("b", "1", "What color is the dog?", "red",
                          ({"operation": "select", "argument": "dog (3)", "dependencies": []},
                           {"operation": "query", "argument": "color", "dependencies": [0]}))
    blank = Question("c", "1", "", "yes", None, "select: cup (12)->exist: ? [0]")
    read = list(with_predicted_programs([gold, given_list, blank], parser, batch_size=2))
    assert [q.id for q in read] == ["a", "b", "c"]
    assert read[0].extra["goldSemanticStr"] == gold.semantic_str
    assert read[1].extra["goldSemanticStr"] == "select: dog (3)->query: color [0]"
    for question in read[:2]:
        program = parse_program(question.semantic_str)
        assert list(question.semantic) == program.to_semantic() and parser_error(question) is None
        assert without_ids(program) == program  # the parser writes no object ids
    assert read[2].program_source() is None and "no words" in parser_error(read[2])
    assert (read[2].answer, read[2].image_id) == ("yes", "1")
    assert same_program(parse_program(read[0].semantic_str), parse_program(gold.semantic_str)) == \
        same_program(parser.parse(gold.question).program, parse_program(gold.semantic_str))
