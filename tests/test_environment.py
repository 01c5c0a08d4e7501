"""pyproject.toml (pip) and environment.yml (conda) list the same dependencies."""

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _normalise(spec: str) -> tuple[str, str]:
    spec = spec.replace(" ", "")
    name, version = re.match(r"^([A-Za-z0-9_.\-]+)(.*)$", spec).groups()
    return name.lower().replace("_", "-"), version


def test_pip_and_conda_dependencies_agree():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pip_specs = list(project["dependencies"]) + tomllib.loads((ROOT / "pyproject.toml").read_text())[
        "build-system"]["requires"]
    for extra in project["optional-dependencies"].values():
        pip_specs += extra
    conda = yaml.safe_load((ROOT / "environment.yml").read_text())["dependencies"]
    # conda's compiler package is what pip users have from their system (no pip equivalent)
    conda_specs = [d for d in conda if isinstance(d, str) and not d.startswith(("python", "pip"))
                   and d != "c-compiler"]
    assert "c-compiler" in conda
    pip_section = [d for d in conda if isinstance(d, dict)][0]["pip"]
    assert pip_section[-1] == "-e ."
    assert dict(map(_normalise, pip_specs)) == dict(map(_normalise, conda_specs + pip_section[:-1]))
    assert project["requires-python"] == ">=3.11"
    assert "python>=3.11" in conda
