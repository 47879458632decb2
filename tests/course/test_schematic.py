"""The schematic of notebook 04: one panel per method, with the parts and arrows each method has and
none that it lacks."""

import pytest
from matplotlib.patches import FancyBboxPatch

from aps_teach.course.schematic import data_flow

EXPLOIT = r"$\phi(s')^\top w$"  # VISR's reward, the exploitation term
KNN = "kNN term"  # APT's reward, the exploration term
LEAST_SQUARES = "least squares"  # task inference


def _panel(ax) -> tuple[str, set[str], set[str]]:
    """A panel's title, the text of its boxes' labels joined, and the gids of its boxes and arrows."""
    boxes = {patch.get_gid() for patch in ax.patches if isinstance(patch, FancyBboxPatch)}
    arrows = {child.get_gid() for child in ax.get_children() if str(child.get_gid()).startswith("edge:")}
    labels = " | ".join(text.get_text() for text in ax.texts if str(text.get_gid()).startswith("label:"))
    return ax.get_title(), labels, boxes | arrows


def test_three_panels_each_with_its_methods_parts_only():
    fig = data_flow()
    assert len(fig.axes) == 3
    (visr_title, visr, visr_ids), (apt_title, apt, apt_ids), (aps_title, aps, aps_ids) = map(_panel, fig.axes)
    assert (visr_title, apt_title) == ("VISR", "APT") and aps_title.startswith("APS")
    # VISR: the vMF reward on phi, task inference; no kNN term, no encoder f
    assert "exploitation: " + EXPLOIT in visr and LEAST_SQUARES in visr
    assert KNN not in visr and "f(s')" not in visr and "part:knn" not in visr_ids
    # APT: the kNN term on its own encoder f; no phi^T w reward, no skill w, no task inference
    assert KNN in apt and "encoder $f(s')$" in apt
    assert EXPLOIT not in apt and "skill $w$" not in apt and LEAST_SQUARES not in apt
    assert "part:exploit" not in apt_ids and "edge:f->knn" in apt_ids
    # APS: both reward terms, the kNN term on phi (APT's f is gone), VISR's task inference
    assert "exploitation: " + EXPLOIT in aps and KNN in aps and LEAST_SQUARES in aps
    assert "f(s')" not in aps and "part:f" not in aps_ids
    assert {"edge:phi->knn", "edge:knn->psi", "edge:exploit->psi", "edge:phi->infer"} <= aps_ids
    assert "edge:phi->knn" not in visr_ids | apt_ids
    # APS's parts are VISR's and APT's kNN term: the union of its parents' boxes, less APT's own f, Q
    parts = {gid for gid in aps_ids if gid.startswith("part:")}
    assert parts == {gid for gid in visr_ids | apt_ids if gid.startswith("part:")} - {
        "part:f", "part:q", "part:finetune"}


def test_one_method_draws_one_panel_and_an_unknown_one_is_refused():
    fig = data_flow("apt")
    assert [ax.get_title() for ax in fig.axes] == ["APT"]
    with pytest.raises(ValueError, match="known: visr, apt, aps"):
        data_flow("dads")
