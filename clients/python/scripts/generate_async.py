"""Writes cairn_client/async_client.py from cairn_client/client.py: the asyncio twin, method for method.

Edit client.py, then run `python3 scripts/generate_async.py`; tests/test_async.py fails while the two
differ from what this script makes.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SYNC = HERE.parent / "cairn_client" / "client.py"
ASYNC = HERE.parent / "cairn_client" / "async_client.py"

REPLACEMENTS = [
    (
        '"""The synchronous client: :class:`CairnClient`."""',
        '"""The asyncio client: :class:`AsyncCairnClient`, method for method the twin of :class:`CairnClient`.\n\n'
        "Generated from client.py by scripts/generate_async.py: edit that file, then run the script.\n"
        '"""',
    ),
    ("import os\nimport time\n", "import asyncio\nimport os\n"),
    (
        "class CairnClient(ClientCore):\n"
        '    """The typed client of the Cairn HTTP API (blocking; :class:`AsyncCairnClient` is the asyncio twin).',
        "class AsyncCairnClient(ClientCore):\n"
        '    """The typed asyncio client of the Cairn HTTP API: :class:`CairnClient`\'s methods, awaited.',
    ),
    (
        'with CairnClient("http://127.0.0.1:7411", api_key="…") as cairn:\n'
        '            cairn.save("team/app", "the deploy target is fly.io", kind="fact")\n'
        '            hits = cairn.search("team/app", "where do we deploy?", k=3).hits',
        'async with AsyncCairnClient("http://127.0.0.1:7411", api_key="…") as cairn:\n'
        '            await cairn.save("team/app", "the deploy target is fly.io", kind="fact")\n'
        '            hits = (await cairn.search("team/app", "where do we deploy?", k=3)).hits',
    ),
    (
        "Use it as a context manager, or call :meth:`close`",
        "Use it as an async context manager, or await :meth:`close`",
    ),
    ("httpx.BaseTransport", "httpx.AsyncBaseTransport"),
    ("httpx.Client(", "httpx.AsyncClient("),
    ("-> CairnClient:", "-> AsyncCairnClient:"),
    (
        "    def close(self) -> None:\n        self._http.close()\n\n"
        "    def __enter__(self) -> AsyncCairnClient:\n        return self\n\n"
        "    def __exit__(self, *exc: object) -> None:\n        self.close()",
        "    async def close(self) -> None:\n        await self._http.aclose()\n\n"
        "    async def __aenter__(self) -> AsyncCairnClient:\n        return self\n\n"
        "    async def __aexit__(self, *exc: object) -> None:\n        await self.close()",
    ),
    ("return self._call(", "return await self._call("),
    ("res = self._http.request(", "res = await self._http.request("),
    ("res = self.write(", "res = await self.write("),
    ("time.sleep(delay)", "await asyncio.sleep(delay)"),
]


def generate(source: str) -> str:
    out = source
    for old, new in REPLACEMENTS:
        if old not in out:
            raise SystemExit(f"generate_async: client.py no longer contains {old!r}; update the script")
        out = out.replace(old, new)
    # Every method but the constructor, from_env and the ones rewritten above becomes a coroutine.
    return re.sub(r"\n    def (?!__init__|from_env)(\w+)\(", r"\n    async def \1(", out)


def main() -> int:
    ASYNC.write_text(generate(SYNC.read_text()))
    print(f"wrote {ASYNC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
