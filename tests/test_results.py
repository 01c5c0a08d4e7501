"""Figures and claims written as files with provenance, byte-for-byte reproducibly."""

import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from barrier_queues import ParameterError  # noqa: E402
from barrier_queues.results import load_claims, load_figures, record_claims, save_figure  # noqa: E402


def _figure():
    fig, ax = plt.subplots()
    ax.plot(np.arange(10), np.arange(10) ** 2, "o-")
    ax.set_title("test")
    return fig


def test_save_figure_writes_png_pdf_and_provenance_reproducibly(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    for folder in (first, second):
        fig = _figure()
        rec = save_figure(fig, "fig0", chapter="intro", function="figures.fig0", folder=folder,
                          parameters={"servers": np.int64(4), "rates": np.array([0.5, 1.0]), "eps": float("nan")},
                          seed=7, simulation={"jobs": 1000, "replications": 2})
        plt.close(fig)
    for suffix in ("png", "pdf", "json"):
        assert (first / f"fig0.{suffix}").read_bytes() == (second / f"fig0.{suffix}").read_bytes()
    assert (first / "fig0.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (first / "fig0.pdf").read_bytes()[:5] == b"%PDF-"
    data = json.loads((first / "fig0.json").read_text())
    assert data["parameters"] == {"servers": 4, "rates": [0.5, 1.0], "eps": None} and data["seed"] == 7
    assert data["library"].startswith("barrier-queues ") and rec["files"] == ["fig0.png", "fig0.pdf"]
    table = load_figures(first)
    assert list(table.figure) == ["fig0"] and table.chapter[0] == "intro"


def test_claims_round_trip_and_bad_input(tmp_path):
    record_claims("stability", [{"result": "Table I", "claim": "c", "reproduced": "r", "agrees": True}],
                  folder=tmp_path)
    record_claims("bounds", [{"result": "Fig. 7", "claim": "u", "reproduced": "v", "agrees": False,
                              "note": "why"}], folder=tmp_path)
    table = load_claims(tmp_path)
    assert list(table.chapter) == ["bounds", "stability"] and list(table.agrees) == [False, True]
    assert list(table.note) == ["why", ""]
    with pytest.raises(ParameterError, match=r"missing \['agrees'\]"):
        record_claims("x", [{"result": "r", "claim": "c", "reproduced": "p"}], folder=tmp_path)
    with pytest.raises(ParameterError, match="name must be a plain file stem"):
        save_figure(_figure(), "../x", chapter="c", function="f", parameters={}, folder=tmp_path)
