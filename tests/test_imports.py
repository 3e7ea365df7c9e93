"""The package's modules import each other without a cycle, counting the imports inside
functions too (only those under ``TYPE_CHECKING``, which never run, are left out), and no
module is much over 500 lines."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("a3c", "lib")


def module_name(path: Path) -> str:
    """The name a module is imported as: lib/ is the package a3c.lib."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    parts = ("a3c", *parts) if parts[0] == "lib" else parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, known: set[str]) -> set[str]:
    """The package modules ``path`` imports, at its top or in its functions."""
    imported = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for child in ast.walk(node):
            if isinstance(child, ast.Import):
                names = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom) and child.module:
                names = [child.module] + [f"{child.module}.{alias.name}" for alias in child.names]
            else:
                continue
            imported.update(name for name in names if name in known)
    return imported


def test_no_import_cycle_among_the_packages_modules():
    paths = {module_name(path): path for package in PACKAGES for path in (ROOT / package).rglob("*.py")}
    graph = {name: imports(path, set(paths)) - {name} for name, path in paths.items()}

    def cycle_from(start: str) -> list[str] | None:
        stack = [(start, [start])]
        while stack:
            node, trail = stack.pop()
            for nxt in graph[node]:
                if nxt == start:
                    return trail + [start]
                if nxt not in trail:
                    stack.append((nxt, trail + [nxt]))
        return None

    cycles = [cycle for name in graph if (cycle := cycle_from(name))]
    assert cycles == [], " -> ".join(cycles[0])


def test_no_module_is_much_over_500_lines():
    long = {str(path.relative_to(ROOT)): len(path.read_text().splitlines())
            for package in PACKAGES for path in (ROOT / package).rglob("*.py")}
    assert {path: lines for path, lines in long.items() if lines > 520} == {}
