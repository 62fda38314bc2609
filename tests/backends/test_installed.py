"""refactor-lsp as a plain install gets it (`pip install /path`, or from git): the wheel built from this
checkout, installed into a fresh venv, run from another folder with no checkout on its path; its
`bench` runs the corpus the wheel carries against the loopback backend, started here.

One wheel and one venv for the session (~10 s). The venv takes the runtime dependencies from this
environment's site-packages (a path line: its `.pth` files, the editable install's among them, are
not read), so the test needs no network."""

from __future__ import annotations

import os
import site
import subprocess
import sys
import sysconfig
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest

from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.responders import region_of
from tests.conftest import write_config

ROOT = Path(__file__).resolve().parents[2]
TASK = "py-metrics-loops-to-comprehensions"  # the corpus's smallest file: a short run


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `bin` folder of a fresh venv holding only the wheel built from this checkout."""
    dist = tmp_path_factory.mktemp("dist")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(dist), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = dist.glob("refactor_lsp-*.whl")
    env_dir = tmp_path_factory.mktemp("venv")
    venv.create(env_dir, with_pip=False, symlinks=os.name != "nt")
    python = env_dir / "bin" / "python"
    subprocess.run(
        [*pip, "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], *site.getsitepackages()}
    (Path(purelib) / "_dependencies.pth").write_text("\n".join(sorted(ours)) + "\n", encoding="utf-8")
    return env_dir / "bin"


@pytest.fixture
def elsewhere(tmp_path: Path) -> Iterator[dict[str, str]]:
    """An environment with no checkout on the path, for a command run from an empty folder."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "REFACTOR_LSP_CONFIG", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(ROOT)))
    yield env


def run_installed(bin_dir: Path, *args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(bin_dir / "refactor-lsp"), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_the_wheel_holds_the_package_and_not_the_test_backend(installed: Path, tmp_path: Path, elsewhere) -> None:
    probe = (
        "import importlib.util, lsp_server; print(lsp_server.__file__); "
        "print(importlib.util.find_spec('lsp_server.testing'))"
    )
    result = subprocess.run(
        [str(installed / "python"), "-c", probe], cwd=tmp_path, env=elsewhere, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    where, testing = result.stdout.splitlines()
    assert Path(where).is_relative_to(installed.parent) and not Path(where).is_relative_to(ROOT)
    assert testing == "None"  # the loopback backend stays in the checkout


def test_bench_help_names_the_corpus_it_has(installed: Path, tmp_path: Path, elsewhere) -> None:
    result = run_installed(installed, "bench", "--help", cwd=tmp_path, env=elsewhere)
    assert result.returncode == 0, result.stderr
    assert "the corpus installed with refactor-lsp" in " ".join(result.stdout.split())


def test_bench_runs_the_installed_corpus(installed: Path, tmp_path: Path, elsewhere) -> None:
    source = next((ROOT / "benchmarks" / "tasks" / TASK).glob("source.*")).read_text(encoding="utf-8")
    with FakeBackend("openai", step_s=0.0005) as fake:
        config = write_config(tmp_path, fake=fake)
        args = ("bench", "--config", str(config), "--task", TASK, "--repeat", "1")
        result = run_installed(installed, *args, cwd=tmp_path, env=elsewhere)
        requests = list(fake.requests)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no task folder found" not in result.stderr
    assert TASK in result.stdout and "speedup" in result.stdout
    regions = [region_of(r["messages"]) for r in requests if region_of(r["messages"])]
    assert len(regions) == 2 and all(region and region in source for region in regions)  # with and without
