"""The library's structure, measured: no import circles, short functions, one place per axis."""

import ast
from pathlib import Path

import pytest

import barrier_queues as bq
from barrier_queues import rules, schedulers
from barrier_queues.kernels import kernels_module

ROOT = Path(bq.__file__).parent
MAX_FUNCTION_LINES = 80


def _modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts) or "__init__"] = path
    return out


def _runtime_imports(tree):
    """Import nodes, skipping ``if TYPE_CHECKING:`` blocks (annotations only, never run)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.ImportFrom):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def import_graph() -> dict[str, set[str]]:
    """Arrows between the package's modules (relative imports, lazy ones included)."""
    mods = _modules()
    graph = {m: set() for m in mods}
    for name, path in mods.items():
        package = name.split(".") if path.name == "__init__.py" and name != "__init__" else name.split(".")[:-1]
        if name == "__init__":
            package = []
        for node in _runtime_imports(ast.parse(path.read_text())):
            if not node.level:
                continue
            base = package[:len(package) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                full = f"{target}.{alias.name}".strip(".")
                hit = full if full in mods else target if target in mods else None
                if hit and hit != name:               # the package's __init__ too (a deferred __version__ was one)
                    graph[name].add(hit)
    return graph


def circles(graph) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_the_package_has_no_import_circles():
    graph = import_graph()
    assert sum(len(v) for v in graph.values()) > 50           # the graph was read (not an empty pass)
    assert circles(graph) == []


def test_the_circle_finder_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_function_is_longer_than_80_lines():
    long = []
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{name}.{node.name}: {lines}")
    assert long == []


def test_simulate_holds_only_the_simulation_front():
    assert len((ROOT / "simulate.py").read_text().splitlines()) < 800


def test_kernel_codes_and_slots_come_from_the_compiled_module():
    k = kernels_module()
    assert rules.KERNEL_SLOTS == k.PARAM_SLOTS
    for rule in rules.RULES.values():
        if rule.kernel_code is not None:
            assert rule.code() == getattr(k, rule.kernel_code)


def test_every_system_field_is_an_option_of_simulate_and_a_sweep_field():
    import argparse
    from dataclasses import fields

    from barrier_queues.cli import build_parser
    from barrier_queues.sweep import FIELDS

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    dests = {a.dest for a in sub.choices["simulate"]._actions}
    replay = {a.dest for a in sub.choices["replay"]._actions}
    for f in fields(bq.BarrierSystem):
        commands = f.metadata.get("commands")
        if commands is None or "simulate" in commands:
            assert f.name in dests and f.name in FIELDS
        else:                                   # (a trace's fields: replay's options, generated from them)
            assert commands == ("replay",) and f.name not in dests
        if commands is not None and "replay" in commands:
            assert f.name == "trace" or f.name in replay
    assert {p.name for p in rules.params()} <= dests


def test_each_scheduler_room_has_a_kernel_include_and_a_reference():
    kernels = (ROOT / "_kernels.pyx").read_text()
    for s in schedulers.SCHEDULERS.values():
        assert f'include "{s.kernel_include}"' in kernels and (ROOT / s.kernel_include).exists()
        assert callable(s.reference) and callable(s.run) and callable(s.run_inputs)


def test_the_old_name_of_the_system_warns():
    """``SimulationConfig`` was a silent alias of ``BarrierSystem``: it still works, with a FutureWarning, and is not
    exported by ``from barrier_queues import *``."""
    import barrier_queues as bq

    with pytest.warns(FutureWarning, match="use BarrierSystem"):
        assert bq.SimulationConfig is bq.BarrierSystem
    assert "SimulationConfig" not in bq.__all__


def test_a_simulation_validates_its_system_once(monkeypatch):
    """A system is validated when it is built; simulate (its stability guard's cache key, the saturated run of a
    mixed workload) makes no validated copy of it (once: 2-5 copies per command)."""
    from barrier_queues import runs
    from barrier_queues import system as system_module

    runs.ensure_compiled("central")                     # its own tiny system, once per process
    built = []
    original = system_module.BarrierSystem.__post_init__

    def counting(self):
        built.append(self)
        return original(self)

    monkeypatch.setattr(system_module.BarrierSystem, "__post_init__", counting)
    for options in ({"tasks_pmf": {2: 0.5, 8: 0.5}, "scheduling": "first-fit"},
                    {"tasks_pmf": {2: 0.5, 8: 0.5}}, {"tasks": 4, "barriers": 2, "release": "knee"},
                    {"tasks": 4, "failure_rate": 0.1}):
        system = bq.BarrierSystem(servers=8, arrival_rate=0.4, **options)
        built.clear()
        bq.simulate(system, jobs=2000, seed=1, workers=1)
        assert built == [], options
