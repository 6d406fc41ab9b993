"""The words and numbers every page and report prints: signed zeros, ranges of signed
numbers, bounds, readings, the verdict box's core contrast and its joint test."""

import numpy as np
import pytest
import xarray as xr

from msapod.studies import book, pages
from msapod.studies.verdict import claims as cl
from msapod.studies.verdict.multiverse import AXES, MAIN_SPEC


@pytest.mark.parametrize(
    ("x", "fmt", "want"),
    [(-0.001, "{:+.2f}", "0.00"), (0.004, "{:+.2f}", "0.00"), (-0.2, "{:+.2f}", "-0.20"),
     (1.5, "{:+.3g}", "+1.5"), (0.5, "{:.0%}", "50%"), (-0.0, "{:.1f}", "0.0")],
)  # fmt: skip
def test_a_value_that_prints_as_zero_has_no_sign(x, fmt, want):
    assert cl.fmt_num(x, fmt) == want


def test_ranges_of_signed_numbers_read_as_ranges():
    assert cl.fmt_range([-0.234, -0.173], "{:.3f}") == "-0.234 to -0.173"
    assert cl.fmt_range([-0.04, 0.21], "{:.2f}") == "-0.04 to 0.21"
    assert cl.fmt_range([3.0, 84.2], "{:.1f}") == "3.0–84.2"
    assert cl.fmt_range([2.0, 2.0, np.nan]) == "2.0"


def test_a_maximum_at_the_grid_s_edge_reads_as_a_bound():
    grid = np.geomspace(3, 128, 48)
    assert book.scale_text(3.0, True, grid) == "≤ 3.00"
    assert book.scale_text(128.0, True, grid) == "≥ 128"
    assert book.scale_text(3.0, False, grid) == "3.00"  # an interior maximum at 3
    assert book.scale_text(np.nan, False, grid) == "—"
    z = xr.Dataset(
        {
            "dominant_scale": (("model", "layer", "peak"), [[[3.0, 40.0], [9.5, np.nan]]]),
            "dominant_edge": (("model", "layer", "peak"), [[[True, False], [False, False]]]),
        },
        coords={"model": ["m"], "layer": [1, 2], "peak": [0, 1], "scale": grid},
    )
    t = book.dominant_scale_table(z)
    assert t.loc[("m", 1)].tolist() == ["≤ 3.00", "40.0"]
    assert t.loc[("m", 2)].tolist() == ["9.50", "—"]
    with pytest.raises(ValueError, match="z: expected dominant_scale over"):
        book.dominant_scale_table(z.isel(model=0))


def test_every_axis_and_reading_has_words():
    t = pages.axes_table()
    assert list(t.index) == [cl.AXIS_NAMES[a] for a in AXES]
    for a, values in AXES.items():
        text = t.loc[cl.AXIS_NAMES[a], "readings (default first)"]
        assert "(default, " in text.split(";")[0]
        assert text.count(";") == len(values) - 1
    # the reading of the curve's text for C4: its windows sit on the paper's lags
    where = cl.reading_words(MAIN_SPEC, ["c4_window", "width"])
    assert where == "window on the paper's lags, σ = 1 × half the range"


def _row(contrast, verdict="partly"):
    c = np.asarray(contrast, float)
    return xr.Dataset(
        {
            "verdict": verdict,
            "measured": "m",
            "contrast": ("model", c),
            "contrast_lower": ("model", c - 0.05),
            "contrast_upper": ("model", c + 0.05),
            "stat": (("model", "layer"), np.full((len(c), 2), 0.3)),
            "lower": (("model", "layer"), np.full((len(c), 2), 0.2)),
            "upper": (("model", "layer"), np.full((len(c), 2), 0.4)),
        },
        coords={"model": [f"m{i}" for i in range(len(c))], "layer": [5, 6]},
    )


def test_the_verdict_box_shows_the_core_contrast_its_verdict_rests_on():
    text = cl._measured_math("C2", _row([-0.16, 0.02]))
    assert text.startswith("core: $\\beta_a(5,6) - \\beta_a(1,2)$ = $-0.16$ to $0.02$ (per model)")
    assert "\\Delta F_\\mathrm{coarse}" in text  # then the band share, the second test
    assert not cl._measured_math("C2", _row([np.nan, np.nan])).startswith("core")


def test_the_reversed_contrast_clause_only_for_claims_with_a_contrast():
    words = {"verdict": "does not hold", "measured": "", "reason": ""}
    assert cl.REVERSED in cl.render("C3", words)["sentence"]
    assert cl.REVERSED not in cl.render("L", words)["sentence"]
    assert cl.REVERSED not in cl.render("C7", words)["sentence"]


def test_the_joint_test_names_a_direction_only_when_significant():
    mv = xr.Dataset(
        {"joint_p": ("claim", [1.0, 0.01]), "joint_direction": ("claim", ["for", "against"])},
        coords={"claim": ["L", "C9"]},
    )
    assert "neither direction" in cl._joint_words("L", mv)
    assert "for the claim" not in cl._joint_words("L", mv)
    assert "against the claim, two-sided p-value 0.01" in cl._joint_words("C9", mv)


def test_a_range_of_scales_marks_its_bounds():
    from msapod.studies.verdict.claims import bounded_range

    assert bounded_range([9.3, 9.3], [-1, -1]) == "≤ 9.3"
    assert bounded_range([3.0, 84.2], [-1, 0]) == "≤ 3.0 to 84.2"
    assert bounded_range([5.0, 128.0], [0, 1]) == "5.0 to ≥ 128.0"
    assert bounded_range([5.0, 12.25], [0, 0]) == "5.0–12.2"
    assert bounded_range([-0.5, 0.25], [0, 0], lambda x: f"{x:.2f}") == "-0.50 to 0.25"
    assert bounded_range([np.nan, 4.0], [-1, 0]) == "4.0"  # NaN ignored, with its side
    assert bounded_range([np.nan], [0]) == "—"
