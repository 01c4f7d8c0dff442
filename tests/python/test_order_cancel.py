"""order-cancel's two-phase tools driven by the official Python MCP SDK over stdio.

Both clients, both protocol eras (the low-level `ClientSession` on 2025-11-25 and the
high-level `Client` on 2026-07-28): prepare, confirm, a repeated confirm that returns the same
request, `get_operation_result`, and another user's confirm refused as not found. The effect is
checked where it lives: the cancellation requests in the SQLite file.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from conftest import REPO
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

pytestmark = pytest.mark.anyio

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
CONVERSATION_LIMIT_S = 60
SCOPE = "order.cancel.request"


def order_cancel_bin() -> Path:
    """The built server: `ORDER_CANCEL_BIN`, else the workspace's debug build."""
    path = Path(os.environ.get("ORDER_CANCEL_BIN", REPO / "target" / "debug" / "order-cancel"))
    if not path.is_file():
        pytest.fail(f"order-cancel binary not found at {path}: run `cargo build -p order-cancel` or set ORDER_CANCEL_BIN")
    return path


def params(db: Path, user: str = "alice", tenant: str = "tenant_demo") -> StdioServerParameters:
    return StdioServerParameters(
        command=str(order_cancel_bin()),
        args=["--db", str(db)],
        env={"GUARD_TENANT": tenant, "GUARD_USER": user, "GUARD_SCOPES": SCOPE, "RUST_LOG": "warn"},
    )


def requests(db: Path) -> list[tuple[int, int, str]]:
    """(request_id, order_id, source_operation_id) of every filed cancellation request."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return list(conn.execute("SELECT request_id, order_id, source_operation_id FROM order_cancel_requests"))
    finally:
        conn.close()


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def body_of(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None, f"no structured content: {result!r}"
    return result.structured_content


@asynccontextmanager
async def session(db: Path, era: str, user: str = "alice") -> AsyncIterator[Any]:
    """A session in `era`: the low-level ClientSession (2025-11-25) or the high-level Client (2026-07-28)."""
    with anyio.fail_after(CONVERSATION_LIMIT_S):
        if era == "push":
            async with stdio_client(params(db, user)) as (read, write):
                async with ClientSession(read, write) as s:
                    init = await s.initialize()
                    assert init.protocol_version == LEGACY
                    yield s
        else:
            client = Client(params(db, user))
            async with client:
                assert client.protocol_version == MODERN
                yield client


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "orders.db"


@pytest.mark.parametrize("era", ["push", "mrtr"])
async def test_prepare_confirm_and_repeat_file_one_request(db: Path, era: str) -> None:
    async with session(db, era) as s:
        prepared = body_of(await s.call_tool("prepare_order_cancel", {"order_no": "A10001", "reason": "changed my mind"}))
        assert prepared["status"] == "PREPARED"
        assert prepared["preview"]["total"] == "129.00"
        assert requests(db) == [], "a prepare files nothing"
        operation_id = prepared["operation_id"]

        first = body_of(await s.call_tool("confirm_order_cancel", {"operation_id": operation_id}))
        assert first["status"] == "SUBMITTED" and first["already_processed"] is False
        again = body_of(await s.call_tool("confirm_order_cancel", {"operation_id": operation_id}))
        assert again["already_processed"] is True
        assert again["result"]["request_id"] == first["result"]["request_id"]

        status = body_of(await s.call_tool("get_operation_result", {"operation_id": operation_id}))
        assert status["status"] == "SUBMITTED"
        assert status["result"] == again["result"]
    assert requests(db) == [(first["result"]["request_id"], 1001, operation_id)]


@pytest.mark.parametrize("era", ["push", "mrtr"])
async def test_another_users_confirm_is_not_found(db: Path, era: str) -> None:
    async with session(db, era) as alice:
        operation_id = body_of(
            await alice.call_tool("prepare_order_cancel", {"order_no": "A10004", "reason": "ordered twice"})
        )["operation_id"]
    async with session(db, era, user="bob") as bob:
        refused = await bob.call_tool("confirm_order_cancel", {"operation_id": operation_id})
        assert refused.is_error
        assert text_of(refused).startswith("[OPERATION_NOT_FOUND]"), text_of(refused)
    assert requests(db) == []


async def test_confirm_schema_takes_only_the_operation_id(db: Path) -> None:
    async with session(db, "push") as s:
        tools = {tool.name: tool for tool in (await s.list_tools()).tools}
        assert set(tools) == {"prepare_order_cancel", "confirm_order_cancel", "get_operation_result"}
        confirm = tools["confirm_order_cancel"]
        assert list(confirm.input_schema["properties"]) == ["operation_id"]
        assert confirm.annotations.destructive_hint is True
        assert confirm.annotations.idempotent_hint is True
        assert tools["get_operation_result"].annotations.read_only_hint is True
        assert list(tools["prepare_order_cancel"].input_schema["properties"]) == ["order_no", "reason"]
