// The official TypeScript MCP client (@modelcontextprotocol/sdk) against a toolkit served by
// toolnexus over stateful streamable HTTP: a session, the tools talking back (log, sample,
// ask), a resource subscription, then DELETE.
// Usage: node mcp_client.cjs <node dir> <MCP endpoint URL>
// Prints one JSON object: what each step observed (the test asserts on it).
"use strict";

const path = require("node:path");
const { createRequire } = require("node:module");

const [nodeDir, url] = process.argv.slice(2);
const sdkRequire = createRequire(path.join(path.resolve(nodeDir), "package.json"));
const { Client } = sdkRequire("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = sdkRequire(
  "@modelcontextprotocol/sdk/client/streamableHttp.js",
);
const {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
} = sdkRequire("@modelcontextprotocol/sdk/types.js");

async function main() {
  const seen = { logs: [], asked: [], updated: [] };
  const client = new Client(
    { name: "ts-client", version: "1.0.0" },
    { capabilities: { sampling: {}, elicitation: { form: {}, url: {} } } },
  );
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    seen.logs.push([n.params.level, n.params.data]);
  });
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    seen.updated.push(n.params.uri);
  });
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => ({
    role: "assistant",
    model: "ts",
    content: { type: "text", text: request.params.messages[0].content.text.toUpperCase() },
  }));
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    seen.asked.push(request.params.message);
    if (request.params.mode === "url") return { action: "accept" };
    return request.params.message === "Sure?"
      ? { action: "accept", content: { sure: true } }
      : { action: "accept", content: { name: "Ada" } };
  });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  seen.session = transport.sessionId || null;
  seen.protocol = transport.protocolVersion || null;
  const text = async (name, args) =>
    (await client.callTool({ name, arguments: args })).content[0].text;
  await client.setLoggingLevel("info");
  seen.chatty = await text("chatty", {});
  seen.summarize = await text("summarize", { text: "hello" });
  seen.confirm = await text("confirm", {});
  seen.visit = await text("visit", {});
  await client.subscribeResource({ uri: "counter://value" });
  seen.bump = await text("bump", {});
  await transport.terminateSession();
  await client.close();
  process.stdout.write(JSON.stringify(seen) + "\n");
}

main().catch((error) => {
  process.stderr.write(String(error && error.stack ? error.stack : error) + "\n");
  process.exit(1);
});
