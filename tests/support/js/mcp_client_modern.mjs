// The official TypeScript MCP client v2 (@modelcontextprotocol/client) pinned to protocol
// 2026-07-28 against a toolkit served by toolnexus over streamable HTTP: no session; a log the
// call opted in to, sampling and elicitation (form and URL modes) answered as input-required
// rounds, and a resource read.
// Usage: node mcp_client_modern.mjs <node dir> <MCP endpoint URL>
// Prints one JSON object: what each step observed (the test asserts on it).

import path from "node:path";
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [nodeDir, url] = process.argv.slice(2);
// The package is installed under <node dir>, not beside this script: load its ESM entry (the
// `import` condition of its exports map) from there.
const packageDir = path.join(path.resolve(nodeDir), "node_modules/@modelcontextprotocol/client");
const manifest = JSON.parse(readFileSync(path.join(packageDir, "package.json"), "utf8"));
const entry = path.join(packageDir, manifest.exports["."].import.default);
const sdk = await import(pathToFileURL(entry).href);
const { Client, StreamableHTTPClientTransport, LOG_LEVEL_META_KEY } = sdk;

async function main() {
  const seen = { logs: [], asked: [], sampled: [], posts: [], sessionHeaders: 0 };
  const client = new Client(
    { name: "ts-modern-client", version: "1.0.0" },
    {
      capabilities: { sampling: {}, elicitation: { form: {}, url: {} } },
      versionNegotiation: { mode: { pin: "2026-07-28" } },
    },
  );
  client.setNotificationHandler("notifications/message", (n) => {
    seen.logs.push([n.params.level, n.params.data]);
  });
  client.setRequestHandler("sampling/createMessage", async (request) => {
    const asked = request.params.messages[0].content.text;
    seen.sampled.push(asked);
    return {
      role: "assistant",
      model: "ts",
      content: { type: "text", text: asked.toUpperCase() },
    };
  });
  client.setRequestHandler("elicitation/create", async (request) => {
    seen.asked.push([request.params.mode || "form", request.params.message]);
    if (request.params.mode === "url") return { action: "accept" };
    return request.params.message === "Sure?"
      ? { action: "accept", content: { sure: true } }
      : { action: "accept", content: { name: "Ada" } };
  });
  // What crossed the wire: each POST's JSON-RPC method (a tools/call retried with answers is
  // marked), and any Mcp-Session-Id header either way.
  const recordingFetch = async (input, init) => {
    const sent = new Headers(init && init.headers);
    if (sent.has("mcp-session-id")) seen.sessionHeaders += 1;
    if (init && init.method === "POST" && typeof init.body === "string") {
      const message = JSON.parse(init.body);
      const params = message.params || {};
      const answered = params.inputResponses ? "+answers" : "";
      seen.posts.push(`${message.method}${params.name ? ":" + params.name : ""}${answered}`);
    }
    const response = await fetch(input, init);
    if (response.headers.has("mcp-session-id")) seen.sessionHeaders += 1;
    return response;
  };
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch });
  client.onerror = (error) => {
    seen.errors = (seen.errors || []).concat(String(error));
  };
  await client.connect(transport);
  seen.era = client.getProtocolEra() || null;
  seen.protocol = client.getNegotiatedProtocolVersion() || null;
  seen.tools = (await client.listTools()).tools.map((tool) => tool.name).sort();
  const text = async (name, args, meta) => {
    const result = await client.callTool({ name, arguments: args, ...(meta && { _meta: meta }) });
    return result.content[0].text;
  };
  // At 2026-07-28 a request opts in to log messages in its own `_meta` (no logging/setLevel).
  seen.chatty = await text("chatty", {}, { [LOG_LEVEL_META_KEY]: "info" });
  seen.summarize = await text("summarize", { text: "hello" });
  seen.confirm = await text("confirm", {});
  seen.visit = await text("visit", {});
  const read = await client.readResource({ uri: "counter://value" });
  seen.resource = read.contents.map((c) => [c.uri, c.text]);
  seen.session = transport.sessionId || null;
  await client.close();
  process.stdout.write(JSON.stringify(seen) + "\n");
}

main().catch((error) => {
  process.stderr.write(String(error && error.stack ? error.stack : error) + "\n");
  process.exit(1);
});
