// An MCP server on stdio offering an MCP App (SEP-1865) for the differential `mcp-methods`
// scenario, on the reference TypeScript SDK (target/mcp-servers): a tool with a `ui://` view
// (`_meta.ui.resourceUri`), a tool only the app may call (`visibility: ["app"]`), one only the
// model may call (`["model"]`), and the view itself as a resource.
import { Server } from "../../target/mcp-servers/node_modules/@modelcontextprotocol/sdk/dist/esm/server/index.js";
import { StdioServerTransport } from "../../target/mcp-servers/node_modules/@modelcontextprotocol/sdk/dist/esm/server/stdio.js";
import {
  CallToolRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
} from "../../target/mcp-servers/node_modules/@modelcontextprotocol/sdk/dist/esm/types.js";

const VIEW = "ui://apps/view.html";
// `--env-out FILE NAME...`: the values of the environment variables NAME written to FILE as
// JSON at start, so a test sees what the runtime launched the server with.
const at = process.argv.indexOf("--env-out");
if (at >= 0) {
  const [file, ...names] = process.argv.slice(at + 1);
  const { writeFileSync } = await import("node:fs");
  writeFileSync(file, JSON.stringify(Object.fromEntries(names.map((n) => [n, process.env[n] ?? null]))));
}
const server = new Server({ name: "apps", version: "1.0.0" }, { capabilities: { tools: {}, resources: {} } });
const none = { type: "object", properties: {} };
const tools = [
  { name: "show", description: "Shows the view.", inputSchema: none, _meta: { ui: { resourceUri: VIEW } } },
  { name: "refresh", description: "Only the app calls this.", inputSchema: none, _meta: { ui: { resourceUri: VIEW, visibility: ["app"] } } },
  { name: "secret", description: "Only the model calls this.", inputSchema: none, _meta: { ui: { visibility: ["model"] } } },
  { name: "plain", description: "No UI at all.", inputSchema: none },
];

server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (request) => ({
  content: [{ type: "text", text: `apps ran ${request.params.name} with ${JSON.stringify(request.params.arguments ?? {})}` }],
}));
server.setRequestHandler(ListResourcesRequestSchema, async () => ({
  resources: [{ uri: VIEW, name: "view", mimeType: "text/html;profile=mcp-app" }],
}));
server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
  if (request.params.uri !== VIEW) throw new Error(`no resource ${request.params.uri}`);
  return { contents: [{ uri: VIEW, mimeType: "text/html;profile=mcp-app", text: "<html><body>view</body></html>", _meta: { ui: { prefersBorder: true } } }] };
});
await server.connect(new StdioServerTransport());
