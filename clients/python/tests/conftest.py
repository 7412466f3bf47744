"""A real `cairn serve` on loopback for the whole session, started from the built CLI (apps/cli/dist).

The server runs with two API keys: ADMIN_KEY may use every namespace (`*`), SCOPED_KEY only the
namespaces under `scoped/`. Tests take a fresh namespace each (`namespace()`), so they can share it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# The package under test, from this checkout (no install needed).
CLIENT_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(CLIENT_DIR))

from cairn_client import CairnClient, RetryPolicy  # noqa: E402

REPO = CLIENT_DIR.parents[1]
CLI = Path(os.environ.get("CAIRN_CLI") or REPO / "apps" / "cli" / "dist" / "main.js")

ADMIN_KEY = "pytest-admin-key-0001"
SCOPED_KEY = "pytest-scoped-key-0001"
# Tests must fail, not hang, if something retries forever: two quick tries at most.
FAST_RETRY = RetryPolicy(max_attempts=2, backoff=0.05, max_backoff=0.1)


@dataclass(frozen=True)
class Server:
    url: str
    data_dir: Path
    process: subprocess.Popen[bytes]


def namespace(prefix: str = "t") -> str:
    """A namespace no other test uses."""
    return f"{prefix}/{uuid.uuid4().hex[:12]}"


def _node() -> str:
    node = os.environ.get("CAIRN_NODE") or shutil.which("node")
    if not node:
        pytest.fail("no `node` on PATH (set CAIRN_NODE): the tests start the real `cairn serve`")
    return node


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    if not CLI.is_file():
        pytest.fail(f"{CLI} is missing: build the CLI first (pnpm exec turbo run build), or set CAIRN_CLI")
    tmp = Path(tempfile.mkdtemp(prefix="cairn-pytest-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CAIRN_", "REDIS_URL"))}
    env.update(
        CAIRN_API_KEYS=f"{ADMIN_KEY}=*;{SCOPED_KEY}=scoped/*",
        CAIRN_LOG_LEVEL="warn",
        CAIRN_EMBEDDER="hash",
    )
    proc = subprocess.Popen(
        [_node(), str(CLI), "serve", "--port", "0", "--data-dir", str(tmp / "data")],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    lines: list[str] = []
    found = threading.Event()
    url: list[str] = []

    def read_stderr() -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            line = raw.decode("utf-8", "replace")
            lines.append(line)
            m = re.search(r"Cairn API on (http://\S+)", line)
            if m and not url:
                url.append(m.group(1))
                found.set()
        found.set()

    threading.Thread(target=read_stderr, daemon=True).start()
    if not found.wait(90) or not url:
        proc.kill()
        pytest.fail(f"cairn serve did not start (exit {proc.poll()}):\n{''.join(lines)}")
    try:
        yield Server(url=url[0], data_dir=tmp / "data", process=proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="session")
def client(server: Server) -> Iterator[CairnClient]:
    """A client with the admin key (every namespace)."""
    with CairnClient(server.url, api_key=ADMIN_KEY, retry=FAST_RETRY) as c:
        yield c


@pytest.fixture(scope="session")
def scoped(server: Server) -> Iterator[CairnClient]:
    """A client whose key may use only the namespaces under `scoped/`."""
    with CairnClient(server.url, api_key=SCOPED_KEY, retry=FAST_RETRY) as c:
        yield c


@pytest.fixture
def ns() -> str:
    return namespace()


def wait_for(predicate, timeout: float = 30.0, every: float = 0.1):  # type: ignore[no-untyped-def]
    """Polls until `predicate()` is truthy; returns its value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {predicate}")
        time.sleep(every)
