"""order-cancel's two-phase tools driven by the official Python MCP SDK over stdio.

Both clients, both protocol eras (the low-level `ClientSession` on 2025-11-25 and the
high-level `Client` on 2026-07-28): prepare, confirm, a repeated confirm that returns the same
request, `get_operation_result`, and another user's confirm refused as not found; and
`open_ticket`'s idempotency key: the same key and arguments, the key with other arguments,
another user's key, an expired key, two identical calls at once, and a retry after the
session was dropped mid-call. The effect is checked where it lives: the cancellation requests
and tickets in the SQLite file.
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
from conftest import REPO, user_dirs
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
        env={"GUARD_TENANT": tenant, "GUARD_USER": user, "GUARD_SCOPES": SCOPE, "RUST_LOG": "warn", **user_dirs(db.parent)},
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
        assert set(tools) == {"prepare_order_cancel", "confirm_order_cancel", "get_operation_result", "open_ticket"}
        assert tools["open_ticket"].annotations.idempotent_hint is True
        assert "request_id" in tools["open_ticket"].input_schema["properties"]
        confirm = tools["confirm_order_cancel"]
        assert list(confirm.input_schema["properties"]) == ["operation_id"]
        assert confirm.annotations.destructive_hint is True
        assert confirm.annotations.idempotent_hint is True
        assert tools["get_operation_result"].annotations.read_only_hint is True
        assert list(tools["prepare_order_cancel"].input_schema["properties"]) == ["order_no", "reason"]


def tickets(db: Path) -> list[tuple[int, str]]:
    """(ticket_id, opened_by) of every support ticket."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return list(conn.execute("SELECT ticket_id, opened_by FROM support_tickets ORDER BY ticket_id"))
    finally:
        conn.close()


def ticket_args(key: str, subject: str = "parcel arrived damaged") -> dict[str, str]:
    return {"request_id": key, "order_no": "A10001", "subject": subject}


@pytest.mark.parametrize("era", ["push", "mrtr"])
async def test_open_ticket_same_key_returns_the_ticket_and_reuse_is_refused(db: Path, era: str) -> None:
    async with session(db, era) as s:
        first = body_of(await s.call_tool("open_ticket", ticket_args("py-1")))
        assert first["already_processed"] is False
        again = body_of(await s.call_tool("open_ticket", ticket_args("py-1")))
        assert again["already_processed"] is True
        assert again["result"] == first["result"]
        reused = await s.call_tool("open_ticket", ticket_args("py-1", "parcel never arrived"))
        assert reused.is_error
        assert text_of(reused).startswith("[IDEMPOTENCY_KEY_REUSED]"), text_of(reused)
    assert tickets(db) == [(first["result"]["ticket_id"], "alice")]


@pytest.mark.parametrize("era", ["push", "mrtr"])
async def test_open_ticket_keys_are_per_user_and_expire(db: Path, era: str) -> None:
    async with session(db, era) as alice:
        mine = body_of(await alice.call_tool("open_ticket", ticket_args("shared")))
    async with session(db, era, user="bob") as bob:
        theirs = body_of(await bob.call_tool("open_ticket", ticket_args("shared")))
        assert theirs["already_processed"] is False
        assert theirs["result"]["ticket_id"] != mine["result"]["ticket_id"]
    # alice's key is past its expiry: purged, and the call runs again.
    conn = sqlite3.connect(db)
    try:
        with conn:
            conn.execute("UPDATE guard_idempotency SET expires_at = 1 WHERE user_id = 'alice'")
    finally:
        conn.close()
    async with session(db, era) as alice:
        fresh = body_of(await alice.call_tool("open_ticket", ticket_args("shared")))
        assert fresh["already_processed"] is False
    assert [who for _, who in tickets(db)] == ["alice", "bob", "alice"]


@pytest.mark.parametrize("era", ["push", "mrtr"])
async def test_open_ticket_two_identical_calls_at_once_file_one(db: Path, era: str) -> None:
    answers: list[dict[str, Any]] = []

    async def one() -> None:
        async with session(db, era) as s:
            answers.append(body_of(await s.call_tool("open_ticket", ticket_args("burst"))))

    async with anyio.create_task_group() as group:
        group.start_soon(one)
        group.start_soon(one)
    assert len(tickets(db)) == 1
    assert sorted(a["already_processed"] for a in answers) == [False, True]
    assert {a["result"]["ticket_id"] for a in answers} == {tickets(db)[0][0]}


@pytest.mark.parametrize("era", ["push", "mrtr"])
async def test_open_ticket_retry_after_a_dropped_session_files_one(db: Path, era: str) -> None:
    # The first session sends the call and is torn down as soon as the ticket is in the file,
    # without waiting for the answer; a new session retries with the same key.
    with anyio.CancelScope() as dropped:

        async def call_then_hang() -> None:
            async with session(db, era) as s:
                await s.call_tool("open_ticket", ticket_args("dropped"))
                await anyio.sleep_forever()

        async def drop_when_filed() -> None:
            with anyio.fail_after(CONVERSATION_LIMIT_S):
                while not (db.exists() and _has_tickets(db)):
                    await anyio.sleep(0.02)
            dropped.cancel()

        async with anyio.create_task_group() as group:
            group.start_soon(call_then_hang)
            group.start_soon(drop_when_filed)
    async with session(db, era) as s:
        retry = body_of(await s.call_tool("open_ticket", ticket_args("dropped")))
    assert retry["already_processed"] is True
    assert tickets(db) == [(retry["result"]["ticket_id"], "alice")]


def _has_tickets(db: Path) -> bool:
    try:
        return bool(tickets(db))
    except sqlite3.OperationalError:
        return False
