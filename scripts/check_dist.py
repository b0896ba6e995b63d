"""What the built sdist and wheel hold (scripts/check_package.sh runs it after `python -m build`).

    python scripts/check_dist.py DIST_DIR

DIST_DIR holds one evalret sdist and one wheel, of the version in src/evalret/version.py. The
wheel holds exactly the package's tracked files (modules, templates, schemas, py.typed) and its
dist-info with the licence: no tests, no stray top-level module, nothing untracked. The sdist holds
what building the wheel needs (pyproject.toml, README.md, LICENSE, every tracked file under
src/evalret) and the changelog, and no tests or repository clutter. Prints one line per archive;
exits 1 naming what is missing or stray.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# besides src/: the top-level files of the sdist (setuptools writes PKG-INFO and setup.cfg)
SDIST_TOP = {"pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "MANIFEST.in"}
SDIST_WRITTEN = {"PKG-INFO", "setup.cfg"}
# what the wheel's dist-info must hold (RECORD and the rest are written by the build)
DIST_INFO = ("METADATA", "RECORD", "entry_points.txt", "licenses/LICENSE")


def source_version() -> str:
    """``__version__`` of src/evalret/version.py, read without importing the source tree."""
    tree = ast.parse((REPO / "src" / "evalret" / "version.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets
        ):
            return str(ast.literal_eval(node.value))
    raise SystemExit("src/evalret/version.py: no __version__")


def package_files() -> set[str]:
    """The package's files as git tracks them, relative to src/ (e.g. evalret/cli.py)."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "src/evalret"], cwd=REPO, capture_output=True, check=True
    ).stdout.decode()
    return {name.removeprefix("src/") for name in out.split("\0") if name}


def wheel_problems(path: Path, version: str, expected: set[str]) -> list[str]:
    """What is missing from the wheel or should not be in it."""
    with zipfile.ZipFile(path) as wheel:
        names = {n for n in wheel.namelist() if not n.endswith("/")}
    info = f"evalret-{version}.dist-info/"
    package = {n for n in names if n.startswith("evalret/")}
    problems = [f"missing {n}" for n in sorted(expected - package)]
    problems += [f"stray {n}" for n in sorted(package - expected)]
    problems += [f"stray {n}" for n in sorted(names - package) if not n.startswith(info)]
    for needed in DIST_INFO:
        if info + needed not in names:
            problems.append(f"missing {info}{needed}")
    return problems


def sdist_problems(path: Path, version: str, expected: set[str]) -> list[str]:
    """What is missing from the sdist or should not be in it."""
    root = f"evalret-{version}/"
    with tarfile.open(path) as sdist:
        names = {m.name for m in sdist.getmembers() if m.isfile()}
    stray = [n for n in names if not n.startswith(root)]
    inside = {n.removeprefix(root) for n in names if n.startswith(root)}
    src = {n.removeprefix("src/") for n in inside if n.startswith("src/evalret/")}
    problems = [f"stray {n}" for n in sorted(stray)]
    problems += [f"missing {n}" for n in sorted(SDIST_TOP - inside)]
    problems += [f"missing src/{n}" for n in sorted(expected - src)]
    problems += [f"stray src/{n}" for n in sorted(src - expected)]
    others = inside - SDIST_TOP - SDIST_WRITTEN
    problems += [
        f"stray {n}"
        for n in sorted(others)
        if not n.startswith(("src/evalret/", "src/evalret.egg-info/"))
    ]
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    dist = Path(argv[0])
    version = source_version()
    expected = package_files()
    wheels = sorted(dist.glob("*.whl"))
    sdists = sorted(dist.glob("*.tar.gz"))
    want_wheel = f"evalret-{version}-py3-none-any.whl"
    want_sdist = f"evalret-{version}.tar.gz"
    if [w.name for w in wheels] != [want_wheel] or [s.name for s in sdists] != [want_sdist]:
        found = ", ".join(p.name for p in (*wheels, *sdists)) or "nothing"
        print(f"check_dist: expected {want_wheel} and {want_sdist} in {dist}, found {found}")
        return 1
    failed = False
    for archive, problems in (
        (wheels[0], wheel_problems(wheels[0], version, expected)),
        (sdists[0], sdist_problems(sdists[0], version, expected)),
    ):
        if problems:
            failed = True
            print(f"check_dist: {archive.name}:", *problems, sep="\n  ")
        else:
            print(f"check_dist: {archive.name}: the package's {len(expected)} files, nothing stray")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
