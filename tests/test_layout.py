"""The package's layout: no import cycles (imports inside functions count too), the core never
imports the study code or the command line, and importing any module registers nothing with
Ray Tune (checked in a fresh interpreter)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"rllib_synpo": ROOT / "rllib_synpo", "synpo_envs": ROOT / "envs"}
OUTSIDE_THE_CORE = ("rllib_synpo.studies", "rllib_synpo.cli")


def module_files() -> dict[str, Path]:
    modules = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = [package, *path.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def imported_modules(path: Path, name: str, known: set[str]) -> set[str]:
    """The project's modules that ``path`` imports anywhere in it (``from a import b`` counts as
    ``a.b`` where that is a module, else ``a``)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    [*package.split(".")[: len(package.split(".")) - node.level + 1], *filter(None, [base])]
                )
            found.update(
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names
            )
    return {module for module in found if module in known and module != name}


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    return {name: imported_modules(path, name, set(files)) for name, path in files.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` as a closed path of module names, or None."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module], _ = "open", stack.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                return [*stack[stack.index(target) :], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        state[module], _ = "done", stack.pop()
        return None

    for module in sorted(graph):
        if module not in state and (cycle := visit(module)):
            return cycle
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_no_import_cycles():
    graph = import_graph()
    assert len(graph) > 50
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_the_core_never_imports_the_studies_or_the_command_line():
    graph = import_graph()
    offenders = {
        module: sorted(t for t in targets if t.startswith(OUTSIDE_THE_CORE))
        for module, targets in graph.items()
        if not module.startswith(OUTSIDE_THE_CORE)
    }
    assert {module: targets for module, targets in offenders.items() if targets} == {}


def test_importing_every_module_registers_nothing_with_tune():
    modules = sorted(name for name in module_files() if not name.endswith(".__main__"))  # those run
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "from ray.tune.registry import ENV_CREATOR, TRAINABLE_CLASS, _global_registry\n"
        "names = [('SynPo', TRAINABLE_CLASS), ('SynPoPPO', TRAINABLE_CLASS), ('synpo_pairs', ENV_CREATOR)]\n"
        "print(sum(_global_registry.contains(kind, name) for name, kind in names))\n"
        "import rllib_synpo; rllib_synpo.register()\n"
        "print(sum(_global_registry.contains(kind, name) for name, kind in names))\n"
    )
    process = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert process.stdout.split() == ["0", "3"]
