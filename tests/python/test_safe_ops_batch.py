"""safe-ops' batch tool `delete_files` driven by the official Python MCP SDK, on both eras.

The human is asked once with a multi-select of the files a glob matches and picks some; only
those go. Each test runs on the pushed `elicitation/create` (2025-11-25, low-level
`ClientSession`) and on the multi-round-trip path (2026-07-28, high-level `Client`), and checks
the files in the sandbox.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
import pytest
from conftest import Workspace
from mcp.client.session import ClientRequestContext
from test_safe_ops import DECLINE, INPUT_KEY, Human, modern_client, outcome_of, push_session, text_of

pytestmark = pytest.mark.anyio

LOGS = ["logs/a.log", "logs/b.log", "logs/c.log"]
ERAS = ["push", "mrtr"]


def pick(*keys: str) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"items": list(keys)})


class Meddler(Human):
    """A human who changes the sandbox while the question is on screen, then answers."""

    def __init__(self, meddle: Callable[[], None], *answers: types.ElicitResult) -> None:
        super().__init__(*answers)
        self._meddle = meddle

    async def __call__(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        self._meddle()
        return await super().__call__(context, params)


@asynccontextmanager
async def session(era: str, workspace: Workspace, human: Human) -> AsyncIterator[Any]:
    """A client of `era` with a `call_tool(name, arguments)` that drives the whole call."""
    if era == "push":
        async with push_session(workspace, human) as client:
            yield client
    else:
        async with modern_client(workspace, human) as client:
            yield client


def seed_logs(workspace: Workspace) -> None:
    (workspace.root / "logs").mkdir()
    for name in LOGS:
        (workspace.root / name).write_text(f"{name}\n")
    (workspace.root / "logs" / "keep.txt").write_text("keep\n")


def exists(workspace: Workspace, name: str) -> bool:
    return (workspace.root / name).is_file()


def per_item(result: types.CallToolResult) -> dict[str, str]:
    assert result.structured_content is not None, text_of(result)
    return {item["key"]: item["outcome"] for item in result.structured_content["items"]}


@pytest.mark.parametrize("era", ERAS)
async def test_batch_the_human_picks_a_subset(workspace: Workspace, era: str) -> None:
    seed_logs(workspace)
    human = Human(pick("logs/a.log", "logs/c.log"))
    async with session(era, workspace, human) as client:
        result = await client.call_tool("delete_files", {"pattern": "logs/*.log"})

    assert not result.is_error, text_of(result)
    assert outcome_of(result) == "executed"
    assert per_item(result) == {"logs/a.log": "done", "logs/c.log": "done"}
    assert result.structured_content["offered"] == 3
    assert text_of(result).startswith("2 of 2 picked items done, 0 skipped")
    assert not exists(workspace, "logs/a.log")
    assert exists(workspace, "logs/b.log")
    assert not exists(workspace, "logs/c.log")
    assert exists(workspace, "logs/keep.txt")

    question = human.question
    if era == "mrtr":
        assert human.request_ids == [INPUT_KEY]
    assert question.message.startswith("3 items match `logs/*.log`.")
    field = question.requested_schema["properties"]["items"]
    assert field["type"] == "array"
    assert field["items"]["anyOf"] == [{"const": name, "title": f"{name} ({len(name) + 1} bytes)"} for name in LOGS]
    assert "required" not in question.requested_schema
    # The server's own location never reaches the client.
    assert str(workspace.root.resolve()) not in question.message
    assert str(workspace.root.resolve()) not in str(question.requested_schema)


@pytest.mark.parametrize("era", ERAS)
async def test_batch_an_item_swapped_after_the_question_is_skipped(workspace: Workspace, era: str) -> None:
    seed_logs(workspace)
    swapped = workspace.root / "logs" / "b.log"

    def swap() -> None:
        # Another file under the same name and with the same size.
        swapped.unlink()
        swapped.write_text("logs/B.log\n")

    human = Meddler(swap, pick(*LOGS))
    async with session(era, workspace, human) as client:
        result = await client.call_tool("delete_files", {"pattern": "logs/*.log"})

    assert not result.is_error, text_of(result)
    assert outcome_of(result) == "executed"
    assert per_item(result) == {"logs/a.log": "done", "logs/c.log": "done", "logs/b.log": "skipped"}
    assert "- skipped: logs/b.log (11 bytes) — changed after the user picked it" in text_of(result)
    assert swapped.read_text() == "logs/B.log\n"
    assert not exists(workspace, "logs/a.log")
    assert not exists(workspace, "logs/c.log")


@pytest.mark.parametrize("era", ERAS)
async def test_batch_more_items_than_the_cap_asks_nobody(workspace: Workspace, era: str) -> None:
    (workspace.root / "many").mkdir()
    for i in range(21):
        (workspace.root / "many" / f"{i:02}.tmp").write_text("x")
    human = Human()
    async with session(era, workspace, human) as client:
        result = await client.call_tool("delete_files", {"pattern": "many/*.tmp"})

    assert not result.is_error, text_of(result)
    assert outcome_of(result) == "too_many"
    assert text_of(result) == (
        "21 items match `many/*.tmp`, more than the 20 one question may offer; nothing was changed and the "
        "user was not asked. Narrow the rule so that at most 20 items match, then call the tool again."
    )
    assert human.questions == []
    assert len(list((workspace.root / "many").iterdir())) == 21


@pytest.mark.parametrize("era", ERAS)
async def test_batch_an_empty_selection_changes_nothing(workspace: Workspace, era: str) -> None:
    seed_logs(workspace)
    human = Human(pick())
    async with session(era, workspace, human) as client:
        result = await client.call_tool("delete_files", {"pattern": "logs/*.log"})

    assert not result.is_error, text_of(result)
    assert outcome_of(result) == "nothing_picked"
    assert text_of(result) == "The user picked none of the 3 offered items; nothing was changed."
    assert all(exists(workspace, name) for name in LOGS)


@pytest.mark.parametrize("era", ERAS)
async def test_batch_a_selection_naming_an_item_not_offered_is_refused(workspace: Workspace, era: str) -> None:
    seed_logs(workspace)
    human = Human(pick("logs/a.log", "logs/keep.txt"))
    async with session(era, workspace, human) as client:
        result = await client.call_tool("delete_files", {"pattern": "logs/*.log"})

    assert result.is_error
    assert outcome_of(result) == "invalid_answer"
    assert text_of(result) == (
        '[INVALID_CONFIRMATION] Nothing was changed: `items` names "logs/keep.txt", which was not offered. '
        "Call the tool again to be asked afresh."
    )
    assert all(exists(workspace, name) for name in [*LOGS, "logs/keep.txt"])


@pytest.mark.parametrize("era", ERAS)
async def test_batch_decline_and_nothing_matched_are_natural(workspace: Workspace, era: str) -> None:
    seed_logs(workspace)
    human = Human(DECLINE)
    async with session(era, workspace, human) as client:
        declined = await client.call_tool("delete_files", {"pattern": "logs/*.log"})
        nothing = await client.call_tool("delete_files", {"pattern": "logs/*.gz"})

    assert not declined.is_error
    assert text_of(declined) == "The user declined; nothing was deleted."
    assert not nothing.is_error
    assert outcome_of(nothing) == "nothing_matched"
    assert text_of(nothing) == "Nothing matches `logs/*.gz`; nothing was changed."
    assert len(human.questions) == 1
    assert all(exists(workspace, name) for name in LOGS)


async def test_mrtr_batch_retry_cannot_widen_the_offer(workspace: Workspace) -> None:
    """A file that starts to match between the rounds was never offered: picking it is refused."""
    seed_logs(workspace)
    async with modern_client(workspace, Human()) as client:
        first = await client.session.call_tool("delete_files", {"pattern": "logs/*.log"}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult), first
        (workspace.root / "logs" / "d.log").write_text("new\n")

        widened = await client.session.call_tool(
            "delete_files",
            {"pattern": "logs/*.log"},
            input_responses={INPUT_KEY: pick("logs/a.log", "logs/d.log")},
            request_state=first.request_state,
        )
    assert widened.is_error
    assert outcome_of(widened) == "invalid_answer"
    assert '"logs/d.log", which was not offered' in text_of(widened)
    assert exists(workspace, "logs/a.log")
    assert exists(workspace, "logs/d.log")
