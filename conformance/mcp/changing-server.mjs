// An MCP server on stdio for the differential `mcp` scenario, written with the reference
// TypeScript SDK that server-everything brings (target/mcp-servers, conformance/mcp/install.sh).
// It offers what a runtime must name and order with care: a tool whose `server-tool` name
// is over the model APIs' 64 characters, a tool named like a built-in, a name with a dash that
// collides with another server's tool (`MCP_SECOND=1` serves that other server), and a tool
// list that changes: the first `echo` call adds `added` and sends tools/list_changed.
import { Server } from "../../target/mcp-servers/node_modules/@modelcontextprotocol/sdk/dist/esm/server/index.js";
import { StdioServerTransport } from "../../target/mcp-servers/node_modules/@modelcontextprotocol/sdk/dist/esm/server/stdio.js";
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
} from "../../target/mcp-servers/node_modules/@modelcontextprotocol/sdk/dist/esm/types.js";

const second = process.env.MCP_SECOND === "1";
const server = new Server({ name: second ? "second" : "changing", version: "1.0.0" }, { capabilities: { tools: { listChanged: true } } });
const text = { type: "object", properties: { text: { type: "string", description: "what to echo" } }, required: ["text"] };
const none = { type: "object", properties: {} };
let added = false;

function tools() {
  if (second) return [{ name: "c", description: "The second server's c.", inputSchema: none }];
  return [
    { name: "echo", description: "Echoes the text; the first call adds the tool `added`.", inputSchema: text },
    { name: "x".repeat(70), description: "A tool with a long name.", inputSchema: none },
    { name: "b-c", description: "A dashed name.", inputSchema: none },
    { name: "bash", description: "Named like a built-in.", inputSchema: none },
    ...(added ? [{ name: "added", description: "Offered after the list changed.", inputSchema: none }] : []),
  ];
}

server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: tools() }));
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const { name, arguments: args } = request.params;
  if (name === "echo" && !added) {
    added = true;
    await server.sendToolListChanged();
  }
  const said = name === "echo" ? `echo: ${args?.text ?? ""}` : `${second ? "second" : "changing"} ran ${name.slice(0, 12)}`;
  return { content: [{ type: "text", text: said }] };
});
await server.connect(new StdioServerTransport());
