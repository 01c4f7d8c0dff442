// guard's example servers driven by the official TypeScript MCP SDK over stdio, as a
// third-party client on protocol 2025-11-25: order-cancel's two-phase tools, and safe-ops'
// pushed elicitation (accept and decline), with the effects checked where they live.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema, LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";

// The SDK asks for its latest version in `initialize`; guard's servers speak it, so every
// session below is on 2025-11-25, the push-elicitation era.
assert.equal(LATEST_PROTOCOL_VERSION, "2025-11-25");

const ORDER_CANCEL_BIN = process.env.ORDER_CANCEL_BIN;
const SAFE_OPS_BIN = process.env.SAFE_OPS_BIN;
const SCOPE = "order.cancel.request";

/** A connected client for `command args` with `env`; `answers` reply to elicitations in turn. */
async function connect(command, args, env, answers = []) {
  const client = new Client(
    { name: "guard-node-tests", version: "1.0.0" },
    { capabilities: { elicitation: { form: {} } } },
  );
  const asked = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    const answer = answers.shift();
    assert.ok(answer, "the test expected no further question");
    return answer;
  });
  const transport = new StdioClientTransport({
    command,
    args,
    env: { ...env, PATH: process.env.PATH, RUST_LOG: "warn" },
    stderr: "inherit",
  });
  await client.connect(transport);
  return { client, asked };
}

function orderCancel(db, user = "alice") {
  assert.ok(ORDER_CANCEL_BIN, "ORDER_CANCEL_BIN names the order-cancel binary");
  return connect(ORDER_CANCEL_BIN, ["--db", db], {
    GUARD_TENANT: "tenant_demo",
    GUARD_USER: user,
    GUARD_SCOPES: SCOPE,
  });
}

const text = (result) => result.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");

test("order-cancel: prepare, confirm, repeat and get_operation_result", async () => {
  const db = join(mkdtempSync(join(tmpdir(), "guard-node-")), "orders.db");
  const { client } = await orderCancel(db);
  try {
    const tools = (await client.listTools()).tools;
    const confirmTool = tools.find((t) => t.name === "confirm_order_cancel");
    assert.deepEqual(Object.keys(confirmTool.inputSchema.properties), ["operation_id"]);
    assert.equal(confirmTool.annotations.idempotentHint, true);

    const prepared = await client.callTool({
      name: "prepare_order_cancel",
      arguments: { order_no: "A10001", reason: "changed my mind" },
    });
    assert.notEqual(prepared.isError, true, text(prepared));
    assert.equal(prepared.structuredContent.status, "PREPARED");
    const operation_id = prepared.structuredContent.operation_id;

    const first = await client.callTool({ name: "confirm_order_cancel", arguments: { operation_id } });
    assert.equal(first.structuredContent.already_processed, false, text(first));
    const again = await client.callTool({ name: "confirm_order_cancel", arguments: { operation_id } });
    assert.equal(again.structuredContent.already_processed, true);
    assert.equal(again.structuredContent.result.request_id, first.structuredContent.result.request_id);

    const status = await client.callTool({ name: "get_operation_result", arguments: { operation_id } });
    assert.equal(status.structuredContent.status, "SUBMITTED");
  } finally {
    await client.close();
  }
});

test("order-cancel: another user's confirm is not found", async () => {
  const db = join(mkdtempSync(join(tmpdir(), "guard-node-")), "orders.db");
  const alice = (await orderCancel(db)).client;
  let operation_id;
  try {
    const prepared = await alice.callTool({
      name: "prepare_order_cancel",
      arguments: { order_no: "A10004", reason: "ordered twice" },
    });
    operation_id = prepared.structuredContent.operation_id;
  } finally {
    await alice.close();
  }
  const bob = (await orderCancel(db, "bob")).client;
  try {
    const refused = await bob.callTool({ name: "confirm_order_cancel", arguments: { operation_id } });
    assert.equal(refused.isError, true);
    assert.match(text(refused), /^\[OPERATION_NOT_FOUND\]/);
  } finally {
    await bob.close();
  }
});

/** safe-ops on a fresh sandbox holding notes.txt; `answers` reply to its questions. */
function safeOps(answers) {
  assert.ok(SAFE_OPS_BIN, "SAFE_OPS_BIN names the safe-ops binary");
  const dir = mkdtempSync(join(tmpdir(), "guard-node-"));
  const root = join(dir, "files");
  mkdirSync(root);
  writeFileSync(join(root, "notes.txt"), "keep me\n");
  const connecting = connect(SAFE_OPS_BIN, ["--root", root, "--db", join(dir, "ops.db"), "--audit-db", join(dir, "audit.db")], {}, answers);
  return { root, connecting };
}

test("safe-ops: delete_file asks once by elicitation/create; accept deletes, decline keeps", async () => {
  const accept = safeOps([{ action: "accept", content: { confirm: true } }]);
  const { client, asked } = await accept.connecting;
  try {
    const result = await client.callTool({ name: "delete_file", arguments: { path: "notes.txt" } });
    assert.notEqual(result.isError, true, text(result));
    assert.equal(asked.length, 1, "the human was asked exactly once");
    assert.equal(asked[0].requestedSchema.properties.confirm.type, "boolean");
    assert.equal(existsSync(join(accept.root, "notes.txt")), false);
  } finally {
    await client.close();
  }

  const decline = safeOps([{ action: "decline" }]);
  const declined = await decline.connecting;
  try {
    const result = await declined.client.callTool({ name: "delete_file", arguments: { path: "notes.txt" } });
    assert.notEqual(result.isError, true, "a decline is an outcome, not an error");
    assert.deepEqual(readdirSync(decline.root), ["notes.txt"]);
  } finally {
    await declined.client.close();
  }
});
