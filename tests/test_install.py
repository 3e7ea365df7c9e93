"""The package as a user installs it: a wheel that holds lib/ as ``a3c.lib`` and puts nothing
but ``a3c`` at the top of site-packages, installed into a fresh venv where every module
imports and a short run trains."""
import configparser
import json
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def packages_on_disk(modules: bool = False) -> set[str]:
    """Every folder of a3c/ and lib/ with an __init__.py (``modules``: every module too), by
    the name it is imported as."""
    found = set()
    for top, name in (("a3c", "a3c"), ("lib", "a3c.lib")):
        for path in (ROOT / top).rglob("*.py" if modules else "__init__.py"):
            parts = path.relative_to(ROOT / top).with_suffix("").parts
            found.add(".".join([name, *(parts[:-1] if parts[-1] == "__init__" else parts)]))
    return found


def test_setup_cfg_lists_every_package_folder():
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    listed = set(setup["options"]["packages"].split())
    assert listed == packages_on_disk()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("wheel")
    source = folder / "source"  # a copy: a build writes build/ and egg-info beside the sources
    for name in ("a3c", "lib"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("setup.cfg", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(folder), str(source)], check=True, capture_output=True, text=True)
    (built,) = folder.glob("a3c-*.whl")
    return built


def test_the_wheel_holds_lib_inside_a3c_and_nothing_else_at_its_top(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert {top for top in tops if not top.endswith(".dist-info")} == {"a3c"}
    modules = {str(path.relative_to(ROOT / "lib")) for path in (ROOT / "lib").rglob("*.py")}
    assert modules and {f"a3c/lib/{module}" for module in modules} <= set(names)


@pytest.mark.timeout(240)
def test_installed_in_a_fresh_venv_every_module_imports_and_a_run_trains(wheel, tmp_path):
    environment = tmp_path / "venv"
    venv.create(environment)  # without a pip of its own: this one installs into it (--python)
    python = environment / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    "--no-index", str(wheel)], check=True, capture_output=True, text=True)
    # the dependencies come from this interpreter's site-packages, read as a plain path (its
    # .pth files, this checkout's editable install among them, are not processed)
    env = {"PATH": f"{environment / 'bin'}:/usr/bin:/bin", "PYTHONPATH": sysconfig.get_paths()["purelib"],
           "HOME": str(tmp_path), "CI": "true"}
    check = ("import importlib, json, pkgutil, sys, a3c\n"
             "names = [m.name for m in pkgutil.walk_packages(a3c.__path__, 'a3c.')]\n"
             "for name in names: importlib.import_module(name)\n"
             "print(json.dumps({'lib': 'lib' in sys.modules, 'file': a3c.__file__, 'modules': names}))")
    shown = subprocess.run([str(python), "-c", check], check=False, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    assert not report["lib"] and report["file"].startswith(str(environment))
    assert packages_on_disk(modules=True) - {"a3c"} == set(report["modules"])
    run = subprocess.run([str(environment / "bin" / "a3c-train"), "-n", "installed", "--env", "CartPole-v1",
                          "--max-frames", "2000", "--logdir", str(tmp_path / "runs")], check=False,
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr
    (summary,) = (tmp_path / "runs").glob("*/summary.json")
    assert json.loads(summary.read_text())["frames"] >= 2000
