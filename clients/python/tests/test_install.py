"""The package installs with pip, offline, with the setuptools build backend, and imports from where it went."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import CLIENT_DIR


def test_pip_install_no_build_isolation_target(tmp_path: Path) -> None:
    # A copy of the source, so that the build's own files (build/, *.egg-info) stay out of the checkout.
    src = tmp_path / "src"
    shutil.copytree(
        CLIENT_DIR,
        src,
        ignore=shutil.ignore_patterns("tests", "__pycache__", "build", "*.egg-info", ".pytest_cache"),
    )
    target = tmp_path / "site"
    env = {**os.environ, "PIP_NO_INPUT": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    pip = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-build-isolation",
            "--no-index",
            "--no-deps",
            "--no-cache-dir",
            "--target",
            str(target),
            str(src),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=180,
    )
    assert pip.returncode == 0, f"pip install failed:\n{pip.stdout}\n{pip.stderr}"
    assert (target / "cairn_client" / "py.typed").is_file()
    assert list(target.glob("cairn_client-0.1.0.dist-info")) or list(target.glob("cairn_client-*.dist-info"))

    probe = (
        "import cairn_client, importlib.metadata as md; "
        "print(cairn_client.__file__); print(md.version('cairn-client')); "
        "print(cairn_client.CairnClient.__name__, cairn_client.AsyncCairnClient.__name__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(target)},
        cwd=tmp_path,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    file, version, names = out.stdout.splitlines()
    assert Path(file).is_relative_to(target)
    assert version == "0.1.0"
    assert names == "CairnClient AsyncCairnClient"
