// A small A2A agent built with the official JavaScript SDK (@a2a-js/sdk + express), on loopback.
// Usage: node a2a_agent.cjs <node dir> [bearer token]
// It echoes the text it gets ("js echo: <text>"). With a token, every route but the public
// agent card needs "Authorization: Bearer <token>". Prints {"url": ...} once it listens.
"use strict";

const path = require("node:path");
const { createRequire } = require("node:module");

const [nodeDir, token] = process.argv.slice(2);
const sdkRequire = createRequire(path.join(path.resolve(nodeDir), "package.json"));
const express = sdkRequire("express");
const { TaskState } = sdkRequire("@a2a-js/sdk");
const { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } = sdkRequire("@a2a-js/sdk/server");
const { UserBuilder, agentCardHandler, jsonRpcHandler } = sdkRequire("@a2a-js/sdk/server/express");

function textOf(message) {
  return (message.parts || [])
    .map((part) => (part.content && part.content.$case === "text" ? part.content.value : ""))
    .join("");
}

const executor = {
  async execute(context, bus) {
    const text = textOf(context.userMessage);
    const base = { id: context.taskId, contextId: context.contextId, history: [context.userMessage] };
    bus.publish(
      AgentEvent.task({ ...base, status: { state: TaskState.TASK_STATE_SUBMITTED }, artifacts: [] })
    );
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId: context.taskId,
        contextId: context.contextId,
        artifact: {
          artifactId: "answer",
          name: "answer",
          parts: [{ content: { $case: "text", value: `js echo: ${text}` } }],
        },
        append: false,
        lastChunk: true,
      })
    );
    bus.publish(
      AgentEvent.statusUpdate({
        taskId: context.taskId,
        contextId: context.contextId,
        status: { state: TaskState.TASK_STATE_COMPLETED, timestamp: new Date().toISOString() },
      })
    );
    bus.finished();
  },
  async cancelTask(taskId, bus) {
    bus.finished();
  },
};

function main() {
  const app = express();
  const server = app.listen(0, "127.0.0.1", () => {
    const url = `http://127.0.0.1:${server.address().port}`;
    const card = {
      name: "jsagent",
      description: "An echo agent built with @a2a-js/sdk.",
      version: "1.0.0",
      supportedInterfaces: [{ url: `${url}/a2a`, protocolBinding: "JSONRPC", protocolVersion: "1.0", tenant: "" }],
      capabilities: { streaming: true, pushNotifications: false, extensions: [] },
      securitySchemes: token
        ? { bearer: { scheme: { $case: "httpAuthSecurityScheme", value: { scheme: "Bearer", description: "", bearerFormat: "" } } } }
        : {},
      securityRequirements: token ? [{ schemes: { bearer: { list: [] } } }] : [],
      defaultInputModes: ["text/plain"],
      defaultOutputModes: ["text/plain"],
      skills: [{ id: "echo", name: "echo", description: "Echoes the text.", tags: ["echo"], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
      signatures: [],
    };
    const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
    app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: handler }));
    app.use("/a2a", (req, res, next) => {
      if (token && req.get("authorization") !== `Bearer ${token}`) {
        res.status(401).set("WWW-Authenticate", "Bearer").json({ error: "unauthorized" });
        return;
      }
      next();
    });
    app.use("/a2a", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
    process.stdout.write(JSON.stringify({ url }) + "\n");
  });
  // The test closes stdin to stop the agent.
  process.stdin.on("end", () => server.close(() => process.exit(0)));
  process.stdin.resume();
}

main();
