"""Output paths are checked before work starts and nothing is overwritten; JSON is strict."""

import json
import math

import pytest

from barrier_queues import ParameterError
from barrier_queues.outputs import check_new_file, check_new_folder, strict_json


def test_check_new_file(tmp_path):
    existing = tmp_path / "a.csv"
    existing.write_text("keep")
    with pytest.raises(ParameterError, match="must be a new file .* pass --force"):
        check_new_file("--jobs-csv", existing)
    assert check_new_file("--jobs-csv", existing, force=True) == existing
    with pytest.raises(ParameterError, match="must not be one of the command's inputs"):
        check_new_file("--jobs-csv", existing, force=True, inputs=[existing])
    with pytest.raises(ParameterError, match="must be a file path, not a folder"):
        check_new_file("--jobs-csv", tmp_path)
    with pytest.raises(ParameterError, match="must be in an existing folder"):
        check_new_file("--jobs-csv", tmp_path / "no" / "x.csv")
    assert existing.read_text() == "keep"


def test_check_new_folder(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "metadata.json").write_text("{}")
    with pytest.raises(ParameterError, match="already holds a run"):
        check_new_folder("--out", tmp_path / "run")
    (tmp_path / "empty").mkdir()
    assert check_new_folder("--out", tmp_path / "empty") == tmp_path / "empty"
    assert check_new_folder("--out", tmp_path / "new" / "deeper") == tmp_path / "new" / "deeper"


def test_strict_json_has_no_nan_and_says_why():
    text = strict_json({"ci": {"waiting": [float("nan"), 1.0]}, "stability": {"lambda_max": float("inf")},
                        "n": 3})
    data = json.loads(text, parse_constant=lambda c: pytest.fail(c))
    assert data["ci"]["waiting"] == [None, 1.0] and data["stability"]["lambda_max"] is None
    assert set(data["null_values"]) == {"ci.waiting[0]", "stability.lambda_max"}
    assert "stability limit" in data["null_values"]["stability.lambda_max"]
    assert not any(isinstance(v, float) and not math.isfinite(v) for v in data["ci"]["waiting"] if v)
