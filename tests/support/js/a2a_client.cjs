// The official JavaScript A2A client (@a2a-js/sdk) against a served toolnexus agent.
// Usage: node a2a_client.cjs <node dir> <agent base url> <bearer token>
// Prints one JSON object: what each step observed (the test asserts on it).
"use strict";

const path = require("node:path");
const { createRequire } = require("node:module");

const [nodeDir, baseUrl, token] = process.argv.slice(2);
const sdkRequire = createRequire(path.join(path.resolve(nodeDir), "package.json"));
const { Role } = sdkRequire("@a2a-js/sdk");
const {
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
} = sdkRequire("@a2a-js/sdk/client");

// Only the A2A calls carry the token; the card is fetched without one (public, a2a.md §2.1).
function withToken(input, init = {}) {
  const headers = new Headers(init.headers || {});
  headers.set("Authorization", `Bearer ${token}`);
  return fetch(input, { ...init, headers });
}

function userMessage(text, extra = {}) {
  return {
    messageId: `js-${Math.random().toString(16).slice(2)}`,
    role: Role.ROLE_USER,
    parts: [{ content: { $case: "text", value: text } }],
    ...extra,
  };
}

function failure(error) {
  return { name: error && error.constructor && error.constructor.name, message: String(error && error.message) };
}

async function main() {
  const out = {};
  const cardAnswer = await fetch(new URL("/.well-known/agent-card.json", baseUrl));
  const card = await cardAnswer.json();
  out.card = { status: cardAnswer.status, securitySchemes: Object.keys(card.securitySchemes || {}) };

  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl: withToken })],
  });
  const client = await new ClientFactory(options).createFromUrl(baseUrl);

  const sent = await client.sendMessage({ message: userMessage("hello from js") });
  const task = sent.payload && sent.payload.$case === "task" ? sent.payload.value : sent;
  out.sent = { id: task.id, state: task.status && task.status.state };

  const got = await client.getTask({ id: task.id });
  out.got = { id: got.id, state: got.status && got.status.state };

  const listed = await client.listTasks({});
  out.listed = { ids: listed.tasks.map((t) => t.id), total: listed.totalSize };

  const asking = await client.sendMessage({ message: userMessage("ask me") });
  const open = asking.payload && asking.payload.$case === "task" ? asking.payload.value : asking;
  out.asking = { state: open.status && open.status.state };
  const cancels = [];
  for (let round = 0; round < 2; round += 1) {
    try {
      const canceled = await client.cancelTask({ id: open.id });
      cancels.push({ state: canceled.status && canceled.status.state });
    } catch (error) {
      cancels.push({ error: failure(error) });
    }
  }
  out.cancels = cancels;

  try {
    await client.getTask({ id: "no-such-task" });
    out.unknown = null;
  } catch (error) {
    out.unknown = failure(error);
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((error) => {
  process.stderr.write(`${error && error.stack ? error.stack : error}\n`);
  process.exit(1);
});
