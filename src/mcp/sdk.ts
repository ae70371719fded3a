// The parts of the MCP SDK savedq uses, in one module: the build makes it a bundle of its own
// (dist/mcp.cjs, esbuild.config.mjs), which only `savedq mcp` and serve's /mcp load (src/mcp/load.ts).
// The low-level Server, not McpServer: savedq answers tools/list and tools/call itself, for each caller.
// eslint-disable-next-line @typescript-eslint/no-deprecated
export { Server } from '@modelcontextprotocol/sdk/server/index.js';
export { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
export { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
export {
  ErrorCode,
  isInitializeRequest,
  JSONRPCMessageSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod/v4';
 
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { Protocol } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { CallToolRequestParamsSchema, CallToolRequestSchema, type CallToolResult, type ServerNotification, type ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';

/**
 * tools/call with its name and arguments as sent, which savedq checks itself (session.ts): the SDK's own
 * schema answers a name that is no text, or arguments that are no object, with -32603 and its
 * validator's dump, and its record of arguments drops a `__proto__` key, which savedq must refuse as
 * the unknown parameter it is (the call ran without it).
 */
export const CallToolRequestAsSentSchema = CallToolRequestSchema.extend({
  params: CallToolRequestParamsSchema.extend({ name: z.unknown(), arguments: z.unknown() }).optional(),
});

/**
 * Answers tools/call with `handler`, given the request as sent (CallToolRequestAsSentSchema). Server's
 * own registration of a tools/call handler checks the request with the SDK's schema first, and answers
 * one it refuses with -32602 and the validator's whole dump; Protocol's, which it overrides, does not:
 * savedq checks the name and the arguments itself, and says what is wrong in a sentence.
 */
export function onToolsCall(
  // eslint-disable-next-line @typescript-eslint/no-deprecated
  server: Server,
  handler: (request: z.infer<typeof CallToolRequestAsSentSchema>, extra: RequestHandlerExtra<ServerRequest, ServerNotification>) => Promise<CallToolResult>,
): void {
  Protocol.prototype.setRequestHandler.call(server, CallToolRequestAsSentSchema, handler);
}
