"""A refusal quotes a bad field's first 40 characters, never the whole field (found by
the Hypothesis property test: a 5,000-character grade came back whole in the message)."""

from __future__ import annotations

import pytest

import verity_eval as engine


@pytest.mark.parametrize(
    "read,line,quoted",
    [
        (engine.read_qrels, "q1 0 d1 " + "[" * 5000, "grade '" + "[" * 40 + "…' is not"),
        (engine.read_run, "q1 Q0 d1 " + "7" * 30 + "x" * 5000 + " 1.0 t", "rank '" + "7" * 30),
        (engine.read_run, "q1 Q0 d1 1 " + "y" * 5000 + " t", "score '" + "y" * 40 + "…' "),
    ],
)
def test_a_refusal_quotes_40_characters_of_a_long_field(tmp_path, read, line, quoted):
    path = tmp_path / "in"
    path.write_text(line + "\n")

    with pytest.raises(engine.EngineInputError) as refused:
        read(path)

    message = str(refused.value)
    assert quoted in message
    assert len(message) < 300
