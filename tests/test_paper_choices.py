"""The page of the paper's choices states every claim's tests as the claim registry has them."""

from pathlib import Path

import pytest

from msapod.studies.registry import REGISTRY
from msapod_book.pages import rule_lines

PAGE = Path(__file__).resolve().parents[1] / "book" / "paper-choices.md"


@pytest.mark.parametrize("claim", list(REGISTRY))
def test_each_rule_reads_as_the_registry_states_it(claim):
    text = PAGE.read_text(encoding="utf-8")
    section = text.split(f"(rule-{claim.lower()})=", 1)[1].split("\n(rule-", 1)[0]
    for line in rule_lines(claim):
        assert f"* {line}" in section, line
