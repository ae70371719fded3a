import { askedVersion } from '../queries/version-ref.js';
import { basename } from 'node:path';
import { answerFactsOf } from '../calls/answer.js';
import type { Caller } from '../access/index.js';
import { InputError, SandboxRefusedError, SavedqError } from '../errors.js';
import { forJsonStringify, jsonText } from '../json.js';
import type { Savedq } from '../library.js';
import { describeText } from '../output/describe.js';
import { closest } from '../suggest.js';
import { SQL_PARAM } from '../queries/sql.js';
import type { Sdk } from './load.js';
import { toolsOf, type QueryTool } from './tools.js';
import type { Log } from '../report.js';

/** Who a session is for, and what it must do around each call. */
export interface McpSession {
  readonly lib: Savedq;
  readonly version: string;
  /** serve's caller (its scopes, fixed parameters, turn); undefined: a local agent over stdio (every query). */
  readonly caller?: Caller | undefined;
  /** Where warnings (a tool name two queries share) and failures not the caller's go: standard error, or serve's log. */
  readonly log: Log;
  /** Wraps each tool call's run: `savedq mcp` lets go of the engine when no call is under way. */
  readonly around?: <T>(work: () => Promise<T>) => Promise<T>;
  /** Told of a caller's SQL the sandbox refused (serve counts and logs it). */
  readonly refusedSql?: (err: SandboxRefusedError) => void;
}

const RESOURCE_PREFIX = 'savedq://queries/';

/**
 * A JSON-RPC error of `code` whose message is `message` as it is: the SDK answers a thrown error with
 * its code and message (McpError's own message would say "MCP error -32602: …" inside an error of that code).
 */
function protocolError(code: number, message: string): Error & { code: number } {
  return Object.assign(new Error(message), { code });
}

/**
 * An MCP server over the saved queries, on the SDK's low-level Server (so an unknown tool and a bad
 * argument are answered in savedq's words, as `run` answers): a tool a query the caller may run, a
 * resource a query's definition. A tool call is a run: the same checks, cache, served record and
 * engine, through the library.
 */
export function mcpServer(sdk: Sdk, session: McpSession): InstanceType<Sdk['Server']> {
  const { lib } = session;
  // eslint-disable-next-line @typescript-eslint/no-deprecated -- the low-level Server on purpose (sdk.ts)
  const server = new sdk.Server(
    { name: 'savedq', title: 'savedq: saved queries over log data', version: session.version },
    {
      capabilities: { tools: { listChanged: true }, resources: {} },
      instructions:
        'Each tool runs one saved, parameterised query over platform log data and returns its rows (no SQL is written by the caller). ' +
        'Read savedq://queries/<name> to see what a query computes. A refused argument comes back as an error result saying what the parameter takes.',
    },
  );
  // Each warning once a session, not at every listing.
  const warned = new Set<string>();
  const warnOnce = (message: string) => {
    if (warned.has(message)) return;
    warned.add(message);
    session.log.warn(`warning: ${message}`);
  };
  // Through the library, which warns of a broken definition (once a set): a tool missing for a typo is said why.
  const tools = async (): Promise<Map<string, QueryTool>> => toolsOf(await lib.savedQueries(), session.caller, warnOnce, lib.executor.shapeOf);

  server.setRequestHandler(sdk.ListToolsRequestSchema, async () => ({ tools: [...(await tools()).values()].map((t) => t.definition) }));

  sdk.onToolsCall(server, async (request, extra) => {
    const { name, arguments: given } = request.params ?? {};
    if (typeof name !== 'string') throw protocolError(sdk.ErrorCode.InvalidParams, 'tools/call needs params.name, the name of a tool (a text).');
    if (given !== undefined && (typeof given !== 'object' || given === null || Array.isArray(given))) {
      throw protocolError(sdk.ErrorCode.InvalidParams, 'tools/call takes params.arguments as an object of the tool\'s parameters by name.');
    }
    const offered = await tools();
    const tool = offered.get(name);
    if (!tool) {
      const guess = closest(name, [...offered.keys()]);
      throw protocolError(sdk.ErrorCode.InvalidParams, `unknown tool ${JSON.stringify(name.slice(0, 80))}.${guess ? ` Did you mean ${guess}?` : ''} Tools: ${[...offered.keys()].join(', ')}.`);
    }
    try {
      // Every own key as sent, `__proto__` too (an unknown parameter, refused as run refuses one).
      const { [SQL_PARAM]: sql, ...rest } = (given ?? {}) as Record<string, unknown>;
      if (sql !== undefined && (!tool.sql || typeof sql !== 'string')) throw new InputError(tool.sql ? 'sql takes a text: one SELECT over result.' : `${tool.query.name} takes no sql argument.`);
      // A query with a parameter named version takes it as that parameter (and cannot be pinned here).
      const { version: asked, ...others } = rest;
      const [version, args] = tool.version ? [asked, others] : [undefined, rest];
      // Read as a version asked anywhere is (askedVersion): a whole number from 1, else said so.
      const pinned = version === undefined ? undefined : askedVersion(typeof version === 'number' ? String(version) : JSON.stringify(version), 'version');
      const run = () => lib.run({ nameOrId: tool.query.id, params: [], arguments: args, sql: sql, caller: session.caller, signal: extra.signal, version: pinned });
      const result = await (session.around ? session.around(run) : run());
      const answer = { rows: result.rows, row_count: result.rows.length, ...answerFactsOf(result, lib.clock()) };
      // Every digit of an integer past 2^53: in the text as savedq writes JSON; in the structured result as
      // far as the SDK's JSON.stringify can write it (json.ts).
      return { structuredContent: forJsonStringify(answer) as Record<string, unknown>, content: [{ type: 'text' as const, text: jsonText(answer) }] };
    } catch (err) {
      if (err instanceof SandboxRefusedError) session.refusedSql?.(err);
      return { isError: true, content: [{ type: 'text' as const, text: failure(err, session) }] };
    }
  });

  server.setRequestHandler(sdk.ListResourcesRequestSchema, async () => ({
    resources: [...(await tools()).values()].map(({ query }) => ({
      uri: `${RESOURCE_PREFIX}${query.name}`,
      name: query.name,
      title: query.name,
      description: `What ${query.name} computes: its parameters, fields, limits and SQL.`,
      mimeType: 'text/plain',
    })),
  }));

  server.setRequestHandler(sdk.ReadResourceRequestSchema, async (request) => {
    const { uri } = request.params;
    const name = uri.startsWith(RESOURCE_PREFIX) ? decodeURIComponent(uri.slice(RESOURCE_PREFIX.length)) : '';
    const tool = [...(await tools()).values()].find((t) => t.query.name === name);
    if (!tool) throw protocolError(sdk.ErrorCode.InvalidParams, `no such resource: ${JSON.stringify(uri.slice(0, 120))}; resources are ${RESOURCE_PREFIX}<query name>.`);
    // The file by its name alone: where it lives on this machine is not the agent's business.
    return { contents: [{ uri, mimeType: 'text/plain', text: describeText(tool.query, { color: false, from: basename(tool.query.file) }) }] };
  });
  return server;
}

/** A failed call in `run`'s words, as its caller may read them (no path, address or user name). */
function failure(err: unknown, session: McpSession): string {
  if (err instanceof SavedqError) {
    if (err.forCaller !== err.message) session.log.error(err.message);
    return err.forCaller;
  }
  session.log.error(`internal error in a tool call: ${err instanceof Error ? err.message : String(err)}`);
  return 'internal error.';
}
