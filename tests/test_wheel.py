"""The package as users install it: ``python -m build`` gives an sdist and a wheel with the compiled kernels, and
the wheel, installed into a fresh virtual environment (no editable install, no source tree on the path), runs a
simulation with the same numbers as the development install."""

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARGS = ["simulate", "-s", "16", "-k", "4", "--utilization", "0.6", "--jobs", "20000", "--seed", "1", "--json"]


@pytest.mark.slow
def test_the_wheel_installs_into_a_fresh_environment_and_runs(tmp_path):
    dist = tmp_path / "dist"
    # the wheel is built from the sdist (build's default), so this also checks that the sdist is complete
    built = subprocess.run([sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)], capture_output=True,
                           text=True, timeout=1800)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    wheel = next(dist.glob("barrier_queues-*.whl"))
    assert next(dist.glob("barrier_queues-*.tar.gz"))
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("barrier_queues/_kernels.") and n.endswith((".so", ".pyd")) for n in names)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / ("Scripts" if sys.platform == "win32" else "bin") / "python"
    installed = subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], capture_output=True,
                               text=True, timeout=1800)
    assert installed.returncode == 0, installed.stderr[-3000:]
    where = tmp_path / "elsewhere"                       # away from the source tree
    where.mkdir()
    origin = subprocess.run([str(python), "-c", "import barrier_queues, sys; print(barrier_queues.__file__)"],
                            capture_output=True, text=True, cwd=where, timeout=120)
    assert str(venv) in origin.stdout and str(ROOT) not in origin.stdout
    fresh = subprocess.run([str(python), "-m", "barrier_queues.cli", *ARGS], capture_output=True, text=True,
                           cwd=where, timeout=300)
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    here = subprocess.run([sys.executable, "-m", "barrier_queues.cli", *ARGS], capture_output=True, text=True,
                          timeout=300)
    mine, theirs = json.loads(here.stdout), json.loads(fresh.stdout)
    assert theirs["mean_sojourn"] == mine["mean_sojourn"] and theirs["quantiles"] == mine["quantiles"]
