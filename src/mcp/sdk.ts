// The parts of the MCP SDK savedq uses, in one module: the build makes it a bundle of its own
// (dist/mcp.cjs, esbuild.config.mjs), which only `savedq mcp` and serve's /mcp load (src/mcp/load.ts).
// The low-level Server, not McpServer: savedq answers tools/list and tools/call itself, for each caller.
// eslint-disable-next-line @typescript-eslint/no-deprecated
export { Server } from '@modelcontextprotocol/sdk/server/index.js';
export { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
export { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
export {
  CallToolRequestSchema,
  ErrorCode,
  isInitializeRequest,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
