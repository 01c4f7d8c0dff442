"""safe-ops driven by the official Python MCP SDK over stdio, as a third-party client.

Two clients, two protocol eras:

* the low-level `ClientSession`, whose `initialize()` handshake negotiates 2025-11-25, so guard
  asks with a pushed `elicitation/create` request;
* the high-level `Client` in its default `mode="auto"`, which probes `server/discover`, adopts
  2026-07-28, and so meets guard's multi-round-trip path: the first `tools/call` answers with an
  `InputRequiredResult` and the client retries with `inputResponses` and the sealed `requestState`.

Every test checks the effect where it lives: the file in the sandbox, the table in the SQLite file.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import pytest
from conftest import SEEDED_FILE, SEEDED_TEXT, Workspace
from mcp import Client, ClientSession
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import stdio_client

pytestmark = pytest.mark.anyio

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
INPUT_KEY = "guard_confirm"
# Upper bound on one test's conversation, so a hung server fails the test instead of the run.
CONVERSATION_LIMIT_S = 60

SEEDED_TABLES = {"customers": 3, "deployments": 0, "orders": 4}

DELETE_SCHEMA = {
    "type": "object",
    "properties": {
        "confirm": {
            "type": "boolean",
            "title": "Confirm deletion",
            "description": "Delete the file.",
            "default": False,
        },
        "reason": {
            "type": "string",
            "title": "Reason",
            "description": "Why (optional, for the audit log).",
            "maxLength": 500,
        },
        # guard's own choice: this call only (the default), or a grant over the folder.
        "guard_grant": {
            "type": "string",
            "title": "How far this answer goes",
            "oneOf": [
                {"const": "once", "title": "This call only"},
                {
                    "const": "grant",
                    "title": "This and up to 5 more calls of delete_file on files directly "
                    "in the sandbox's top folder, for 10 minutes, without asking again",
                },
            ],
            "default": "once",
        },
    },
}

DROP_SCHEMA = {
    "type": "object",
    "properties": {
        "typed_name": {
            "type": "string",
            "title": "Table name",
            "description": "Type the table name exactly to confirm.",
        },
        "approver": {
            "type": "string",
            "title": "Approver",
            "description": "Who approves this drop.",
            "minLength": 1,
            "maxLength": 100,
        },
    },
    "required": ["typed_name", "approver"],
}

DEPLOY_SCHEMA = {
    "type": "object",
    "properties": {
        "approval_level": {
            "type": "string",
            "title": "Approval level",
            "description": "Approval level.",
            "oneOf": [{"const": "standard", "title": "Standard"}, {"const": "urgent", "title": "Urgent"}],
            "default": "standard",
        },
        "rollback_plan": {
            "type": "string",
            "title": "Rollback plan",
            "description": "Summary of the rollback plan.",
            "minLength": 1,
            "maxLength": 2000,
        },
    },
    "required": ["rollback_plan"],
}


def accept(**content: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content=content)


DECLINE = types.ElicitResult(action="decline")
CANCEL = types.ElicitResult(action="cancel")


class Human:
    """An elicitation callback that answers from a script and records every question."""

    def __init__(self, *answers: types.ElicitResult) -> None:
        self._answers = list(answers)
        self.questions: list[types.ElicitRequestFormParams] = []
        self.request_ids: list[types.RequestId] = []

    async def __call__(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        assert isinstance(params, types.ElicitRequestFormParams), f"expected a form elicitation, got {params!r}"
        self.questions.append(params)
        self.request_ids.append(context.request_id)
        if not self._answers:
            return types.ErrorData(code=types.INTERNAL_ERROR, message="the test expected no further question")
        return self._answers.pop(0)

    @property
    def question(self) -> types.ElicitRequestFormParams:
        assert len(self.questions) == 1, f"expected exactly one question, got {len(self.questions)}"
        return self.questions[0]


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def outcome_of(result: types.CallToolResult) -> str:
    assert result.meta is not None, f"guarded result carries no _meta: {result!r}"
    guard = result.meta["guard"]
    assert guard["traceId"], f"no trace id in {guard!r}"
    return guard["outcome"]


@asynccontextmanager
async def push_session(workspace: Workspace, human: Human) -> AsyncIterator[ClientSession]:
    """The low-level session: `initialize()` negotiates the handshake era (push elicitation)."""
    with anyio.fail_after(CONVERSATION_LIMIT_S):
        async with stdio_client(workspace.params()) as (read, write):
            async with ClientSession(read, write, elicitation_callback=human) as session:
                init = await session.initialize()
                assert init.protocol_version == LEGACY
                assert session.protocol_version == LEGACY
                yield session


@asynccontextmanager
async def modern_client(workspace: Workspace, human: Human) -> AsyncIterator[Client]:
    """The high-level `Client` in its default mode: discovers the server and adopts 2026-07-28."""
    with anyio.fail_after(CONVERSATION_LIMIT_S):
        client = Client(workspace.params(), elicitation_callback=human)
        assert client.mode == "auto"
        async with client:
            assert client.protocol_version == MODERN
            # Adopted through server/discover, not through the initialize handshake.
            assert client.session.discover_result is not None
            assert MODERN in client.session.discover_result.supported_versions
            assert client.session.initialize_result is None
            yield client


# ---------------------------------------------------------------------------------------------
# Low-level ClientSession: protocol 2025-11-25, pushed elicitation/create
# ---------------------------------------------------------------------------------------------


async def test_push_delete_file_accept_deletes_the_file(workspace: Workspace) -> None:
    human = Human(accept(confirm=True, reason="cleanup"))
    async with push_session(workspace, human) as session:
        result = await session.call_tool("delete_file", {"path": SEEDED_FILE})

    assert not result.is_error, text_of(result)
    assert text_of(result).startswith(f"Deleted {SEEDED_FILE}. Reason: cleanup.\n")
    assert "To undo this, call undo with operation_id " in text_of(result)
    assert outcome_of(result) == "executed"
    assert not workspace.seeded.exists()

    question = human.question
    # A pushed request: the callback saw a JSON-RPC request id, not an MRTR input key.
    assert human.request_ids[0] != INPUT_KEY
    assert question.requested_schema == DELETE_SCHEMA
    assert "required" not in question.requested_schema
    # The file is named relative to the sandbox root; the server's paths never reach the client.
    assert f"Delete file {SEEDED_FILE} (" in question.message
    assert str(workspace.root.resolve()) not in question.message
    assert str(workspace.db.parent.resolve()) not in question.message
    assert "You can undo this until" in question.message


async def test_push_delete_file_decline_keeps_the_file(workspace: Workspace) -> None:
    human = Human(DECLINE)
    async with push_session(workspace, human) as session:
        result = await session.call_tool("delete_file", {"path": SEEDED_FILE})

    assert not result.is_error
    assert text_of(result) == "The user declined; nothing was deleted."
    assert outcome_of(result) == "declined"
    assert workspace.seeded.read_text() == SEEDED_TEXT
    assert human.question.requested_schema == DELETE_SCHEMA


async def test_push_delete_file_cancel_keeps_the_file(workspace: Workspace) -> None:
    human = Human(CANCEL)
    async with push_session(workspace, human) as session:
        result = await session.call_tool("delete_file", {"path": SEEDED_FILE})

    assert not result.is_error
    assert text_of(result) == "The confirmation was cancelled; nothing was deleted."
    assert outcome_of(result) == "cancelled"
    assert workspace.seeded.read_text() == SEEDED_TEXT
    assert len(human.questions) == 1


async def test_push_delete_file_unticked_box_is_refused(workspace: Workspace) -> None:
    human = Human(accept(confirm=False))
    async with push_session(workspace, human) as session:
        result = await session.call_tool("delete_file", {"path": SEEDED_FILE})

    assert result.is_error
    assert text_of(result).startswith("[INVALID_CONFIRMATION]")
    assert outcome_of(result) == "invalid_answer"
    assert workspace.seeded.read_text() == SEEDED_TEXT


async def test_push_drop_table_accept_drops_the_table(workspace: Workspace) -> None:
    human = Human(accept(typed_name="customers", approver="Ada"))
    async with push_session(workspace, human) as session:
        result = await session.call_tool("drop_table", {"table": "customers"})
        assert workspace.tables() == {"deployments": 0, "orders": 4}

    assert not result.is_error, text_of(result)
    assert text_of(result).startswith("Dropped table customers (3 rows). Approver: Ada.\n")
    assert "To undo this, call undo with operation_id " in text_of(result)
    assert outcome_of(result) == "executed"
    assert workspace.tables() == {"deployments": 0, "orders": 4}

    question = human.question
    assert question.requested_schema == DROP_SCHEMA
    assert question.requested_schema["required"] == ["typed_name", "approver"]
    assert "with all its 3 rows." in question.message
    assert "You can undo this until" in question.message
    assert question.message.endswith("To confirm, type customers exactly.")


async def test_push_drop_table_decline_keeps_the_table(workspace: Workspace) -> None:
    human = Human(DECLINE)
    async with push_session(workspace, human) as session:
        result = await session.call_tool("drop_table", {"table": "customers"})

    assert not result.is_error
    assert text_of(result) == "The user declined; no table was dropped."
    assert outcome_of(result) == "declined"
    assert workspace.tables() == SEEDED_TABLES


async def test_push_drop_table_cancel_keeps_the_table(workspace: Workspace) -> None:
    human = Human(CANCEL)
    async with push_session(workspace, human) as session:
        result = await session.call_tool("drop_table", {"table": "customers"})

    assert not result.is_error
    assert text_of(result) == "The confirmation was cancelled; no table was dropped."
    assert outcome_of(result) == "cancelled"
    assert workspace.tables() == SEEDED_TABLES


async def test_push_drop_table_wrong_typed_name_is_refused(workspace: Workspace) -> None:
    human = Human(accept(typed_name="orders", approver="Ada"))
    async with push_session(workspace, human) as session:
        result = await session.call_tool("drop_table", {"table": "customers"})
        assert workspace.tables() == SEEDED_TABLES

    assert result.is_error
    message = text_of(result)
    assert message.startswith("[INVALID_CONFIRMATION]")
    assert '"orders" does not match "customers"' in message
    assert outcome_of(result) == "invalid_answer"
    assert workspace.tables() == SEEDED_TABLES


async def test_push_deploy_accept_records_the_deployment(workspace: Workspace) -> None:
    human = Human(accept(approval_level="urgent", rollback_plan="redeploy v41 from the tag"))
    async with push_session(workspace, human) as session:
        result = await session.call_tool("deploy", {"service": "api"})

    assert not result.is_error, text_of(result)
    assert outcome_of(result) == "executed"
    assert workspace.deployments() == [("api", "urgent", "redeploy v41 from the tag")]
    assert human.question.requested_schema == DEPLOY_SCHEMA


async def test_push_deploy_business_rule_is_enforced_on_the_server(workspace: Workspace) -> None:
    # Valid against the requested schema, but the server-side rule wants a longer plan.
    human = Human(accept(approval_level="urgent", rollback_plan="undo"))
    async with push_session(workspace, human) as session:
        result = await session.call_tool("deploy", {"service": "api"})

    assert result.is_error
    assert "an urgent deploy needs a rollback plan of at least 10 visible characters" in text_of(result)
    assert workspace.deployments() == []


# ---------------------------------------------------------------------------------------------
# High-level Client: protocol 2026-07-28, InputRequiredResult + requestState (MRTR)
# ---------------------------------------------------------------------------------------------


async def test_mrtr_delete_file_accept_deletes_the_file(workspace: Workspace) -> None:
    human = Human(accept(confirm=True))
    async with modern_client(workspace, human) as client:
        result = await client.call_tool("delete_file", {"path": SEEDED_FILE})

    assert not result.is_error, text_of(result)
    assert text_of(result).startswith(f"Deleted {SEEDED_FILE}.\n")
    assert "To undo this, call undo with operation_id " in text_of(result)
    assert outcome_of(result) == "executed"
    assert not workspace.seeded.exists()
    # The SDK's MRTR driver hands the callback the InputRequiredResult's key as the request id.
    assert human.request_ids == [INPUT_KEY]
    assert human.question.requested_schema == DELETE_SCHEMA


async def test_mrtr_delete_file_decline_keeps_the_file(workspace: Workspace) -> None:
    human = Human(DECLINE)
    async with modern_client(workspace, human) as client:
        result = await client.call_tool("delete_file", {"path": SEEDED_FILE})

    assert not result.is_error
    assert text_of(result) == "The user declined; nothing was deleted."
    assert outcome_of(result) == "declined"
    assert workspace.seeded.read_text() == SEEDED_TEXT
    assert human.request_ids == [INPUT_KEY]


async def test_mrtr_delete_file_cancel_keeps_the_file(workspace: Workspace) -> None:
    human = Human(CANCEL)
    async with modern_client(workspace, human) as client:
        result = await client.call_tool("delete_file", {"path": SEEDED_FILE})

    assert not result.is_error
    assert text_of(result) == "The confirmation was cancelled; nothing was deleted."
    assert outcome_of(result) == "cancelled"
    assert workspace.seeded.read_text() == SEEDED_TEXT


async def test_mrtr_drop_table_accept_drops_the_table(workspace: Workspace) -> None:
    human = Human(accept(typed_name="orders", approver="Grace"))
    async with modern_client(workspace, human) as client:
        result = await client.call_tool("drop_table", {"table": "orders"})

    assert not result.is_error, text_of(result)
    assert text_of(result).startswith("Dropped table orders (4 rows). Approver: Grace.\n")
    assert "To undo this, call undo with operation_id " in text_of(result)
    assert outcome_of(result) == "executed"
    assert workspace.tables() == {"customers": 3, "deployments": 0}
    assert human.request_ids == [INPUT_KEY]
    question = human.question
    assert question.requested_schema == DROP_SCHEMA
    assert question.requested_schema["required"] == ["typed_name", "approver"]
    assert question.message.endswith("To confirm, type orders exactly.")


async def test_mrtr_drop_table_decline_keeps_the_table(workspace: Workspace) -> None:
    human = Human(DECLINE)
    async with modern_client(workspace, human) as client:
        result = await client.call_tool("drop_table", {"table": "customers"})

    assert not result.is_error
    assert text_of(result) == "The user declined; no table was dropped."
    assert outcome_of(result) == "declined"
    assert workspace.tables() == SEEDED_TABLES


async def test_mrtr_drop_table_wrong_typed_name_is_refused(workspace: Workspace) -> None:
    human = Human(accept(typed_name="customer", approver="Grace"))
    async with modern_client(workspace, human) as client:
        result = await client.call_tool("drop_table", {"table": "customers"})

    assert result.is_error
    assert text_of(result).startswith("[INVALID_CONFIRMATION]")
    assert outcome_of(result) == "invalid_answer"
    assert workspace.tables() == SEEDED_TABLES


async def test_mrtr_rounds_step_by_step(workspace: Workspace) -> None:
    """Drive the two legs by hand: the first call asks and changes nothing; the retry runs."""
    human = Human()
    async with modern_client(workspace, human) as client:
        first = await client.session.call_tool("delete_file", {"path": SEEDED_FILE}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult), first
        assert first.request_state
        assert first.input_requests is not None and set(first.input_requests) == {INPUT_KEY}
        request = first.input_requests[INPUT_KEY]
        assert isinstance(request, types.ElicitRequest)
        assert isinstance(request.params, types.ElicitRequestFormParams)
        assert request.params.requested_schema == DELETE_SCHEMA
        assert workspace.seeded.read_text() == SEEDED_TEXT

        done = await client.session.call_tool(
            "delete_file",
            {"path": SEEDED_FILE},
            input_responses={INPUT_KEY: accept(confirm=True)},
            request_state=first.request_state,
        )
        assert not done.is_error, text_of(done)
        assert outcome_of(done) == "executed"
        assert not workspace.seeded.exists()
    assert human.questions == []


async def test_mrtr_request_state_is_single_use(workspace: Workspace) -> None:
    async with modern_client(workspace, Human()) as client:
        first = await client.session.call_tool("delete_file", {"path": SEEDED_FILE}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult), first

        declined = await client.session.call_tool(
            "delete_file",
            {"path": SEEDED_FILE},
            input_responses={INPUT_KEY: DECLINE},
            request_state=first.request_state,
        )
        assert outcome_of(declined) == "declined"

        # The same sealed state again, now with an accept: a replay, refused.
        replay = await client.session.call_tool(
            "delete_file",
            {"path": SEEDED_FILE},
            input_responses={INPUT_KEY: accept(confirm=True)},
            request_state=first.request_state,
        )
        assert replay.is_error
        assert text_of(replay).startswith("[INVALID_STATE]")
        assert outcome_of(replay) == "replayed"
    assert workspace.seeded.read_text() == SEEDED_TEXT


async def test_mrtr_request_state_is_bound_to_the_arguments(workspace: Workspace) -> None:
    (workspace.root / "other.txt").write_text("another file\n")
    async with modern_client(workspace, Human()) as client:
        first = await client.session.call_tool("delete_file", {"path": SEEDED_FILE}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult), first

        # The confirmation for notes.txt must not delete other.txt.
        moved = await client.session.call_tool(
            "delete_file",
            {"path": "other.txt"},
            input_responses={INPUT_KEY: accept(confirm=True)},
            request_state=first.request_state,
        )
        assert moved.is_error
        assert text_of(moved).startswith("[INVALID_STATE]")
        assert outcome_of(moved) == "bad_state"

        tampered = first.request_state[:-2] + ("AA" if not first.request_state.endswith("AA") else "BB")
        forged = await client.session.call_tool(
            "delete_file",
            {"path": SEEDED_FILE},
            input_responses={INPUT_KEY: accept(confirm=True)},
            request_state=tampered,
        )
        assert forged.is_error
        assert outcome_of(forged) == "bad_state"
    assert workspace.seeded.read_text() == SEEDED_TEXT
    assert (workspace.root / "other.txt").read_text() == "another file\n"


# ---------------------------------------------------------------------------------------------
# Production: deploy never deploys there, and names deploy_production
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ["push", "mrtr"])
async def test_deploy_to_production_names_deploy_production_and_asks_nobody(workspace: Workspace, era: str) -> None:
    human = Human()
    arguments = {"service": "api", "environment": "Production"}
    if era == "push":
        async with push_session(workspace, human) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            result = await session.call_tool("deploy", arguments)
    else:
        async with modern_client(workspace, human) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            result = await client.call_tool("deploy", arguments)

    assert not result.is_error, text_of(result)
    assert outcome_of(result) == "precondition_failed"
    assert "call deploy_production with service `api`" in text_of(result)
    assert human.questions == []
    assert workspace.deployments() == []
    production = tools["deploy_production"]
    assert production.annotations.destructive_hint is True
    assert list(production.input_schema["properties"]) == ["service"]


# ---------------------------------------------------------------------------------------------
# Field order, on both paths
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ["push", "mrtr"])
async def test_requested_schema_keeps_declaration_order(workspace: Workspace, era: str) -> None:
    human = Human(DECLINE)
    if era == "push":
        async with push_session(workspace, human) as session:
            await session.call_tool("drop_table", {"table": "customers"})
    else:
        async with modern_client(workspace, human) as client:
            await client.call_tool("drop_table", {"table": "customers"})

    # DropTableConfirmation declares typed_name first, then approver; a form renders in
    # the order its properties arrive.
    assert list(human.question.requested_schema["properties"]) == ["typed_name", "approver"]
