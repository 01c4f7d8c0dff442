"""safe-ops' production deploys driven by the official Python MCP SDK: the client is sent to
guard's approval page by a URL elicitation (pushed on 2025-11-25, an input request on
2026-07-28), the approvers' one-time links arrive as files in a drop directory the client
never reads, and bob and carol approve over HTTP as their browsers would. The requester's own
link cannot approve, and the deploy runs once.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from conftest import Workspace
from mcp import Client, ClientSession
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import stdio_client

pytestmark = pytest.mark.anyio

CONVERSATION_LIMIT_S = 60


def page(url: str, fields: dict[str, str] | None = None) -> tuple[int, str]:
    """GET `url`, or POST `fields` to it from its own origin; the status and the HTML."""
    data = None
    headers = {}
    if fields is not None:
        parsed = urllib.parse.urlsplit(url)
        data = urllib.parse.urlencode(fields).encode()
        headers = {
            "Origin": f"{parsed.scheme}://{parsed.netloc}",
            "Sec-Fetch-Site": "same-origin",
            "Content-Type": "application/x-www-form-urlencoded",
        }
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def decide(url: str, decision: str, typed: str = "billing") -> tuple[int, str]:
    """Posts `decision` through the page's own form (its CSRF token included)."""
    _, html = page(url)
    match = re.search(r'name="csrf" value="([^"]+)"', html)
    assert match, f"the page at {url} has no form: {html}"
    return page(url, {"csrf": match.group(1), "decision": decision, "typed": typed})


def approvals(html: str) -> str:
    match = re.search(r"Approvals: (\d+ of \d+)", re.sub(r"<[^>]+>", "", html))
    assert match, html
    return match.group(1)


def links(drop: Path) -> dict[str, str]:
    """The approver links delivered to the drop directory, by approver."""
    deadline = time.monotonic() + 20
    found: dict[str, str] = {}
    while time.monotonic() < deadline:
        found = {}
        for path in drop.glob("*.json"):
            body = json.loads(path.read_text())
            found[body["approver"]["user"]] = body["url"]
        if len(found) == 2:
            return found
        time.sleep(0.05)
    raise AssertionError(f"the approvers' links did not arrive: {found}")


class Requester:
    """The requester's client: opens the page it is sent to; meanwhile bob and carol, who got
    their links elsewhere, approve. Records what the requester's link allowed."""

    def __init__(self, drop: Path) -> None:
        self.drop = drop
        self.urls: list[str] = []
        self.own_approval: tuple[int, str] | None = None
        self.after_own: str | None = None

    async def __call__(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestURLParams), f"expected a URL elicitation, got {params!r}"
        self.urls.append(params.url)
        if len(self.urls) == 1:
            await anyio.to_thread.run_sync(self.approve_elsewhere, params.url)
        return types.ElicitResult(action="accept")

    def approve_elsewhere(self, url: str) -> None:
        # The requester tries to approve their own request through their link: refused.
        self.own_approval = decide(url, "approve")
        self.after_own = approvals(page(url)[1])
        delivered = links(self.drop)
        assert url not in delivered.values(), "the requester was sent an approver's link"
        for count, who in enumerate(("bob", "carol"), start=1):
            status, html = decide(delivered[who], "approve")
            assert status == 200, (who, status, html)
            assert approvals(html) == f"{count} of 2", (who, html)


@pytest.fixture
def production(workspace: Workspace, tmp_path: Path) -> tuple[Workspace, Path]:
    drop = tmp_path / "links"
    drop.mkdir(mode=0o700)
    return workspace, drop


def params(workspace: Workspace, drop: Path):
    server = workspace.params()
    server.args += ["--approver", "bob,carol", "--approver-drop", str(drop)]
    server.env = {**(server.env or {}), "GUARD_TENANT": "local", "GUARD_USER": "alice"}
    return server


@asynccontextmanager
async def session(workspace: Workspace, drop: Path, era: str, human: Requester) -> AsyncIterator[object]:
    with anyio.fail_after(CONVERSATION_LIMIT_S):
        if era == "push":
            async with stdio_client(params(workspace, drop)) as (read, write):
                async with ClientSession(read, write, elicitation_callback=human) as push:
                    await push.initialize()
                    yield push
        else:
            client = Client(params(workspace, drop), elicitation_callback=human)
            async with client:
                assert client.protocol_version == "2026-07-28"
                yield client


@pytest.mark.parametrize("era", ["push", "mrtr"])
async def test_deploy_production_runs_once_after_bob_and_carol_approve(
    production: tuple[Workspace, Path], era: str
) -> None:
    workspace, drop = production
    human = Requester(drop)
    async with session(workspace, drop, era, human) as client:
        result = await client.call_tool("deploy_production", {"service": "billing"})

    text = "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))
    assert not result.is_error, text
    assert result.meta["guard"]["outcome"] == "executed", result.meta
    assert "approved by two people" in text
    assert workspace.deployments() == [("billing", "production (two approvers)", "")]
    # The requester's link shows the request, but approving through it is refused.
    assert human.own_approval is not None
    assert human.after_own == "0 of 2", human.own_approval
    # The links reached the drop directory, never the client: it was sent only its own page.
    assert set(human.urls) == {human.urls[0]}
    assert all(url not in human.urls for url in links(drop).values())
