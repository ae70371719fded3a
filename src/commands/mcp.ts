import type { Savedq } from '../library.js';
import { loadSdk } from '../mcp/load.js';
import { mcpServer } from '../mcp/session.js';
import { commandLog, type CommonOptions, type Io } from './io.js';

/** Options of `savedq mcp`. */
export interface McpCommandOptions extends CommonOptions {
  readonly version: string;
}

/** A JSON-RPC message as far as this command looks into it: a request has an id and a method, a response an id alone. */
type Message = { id?: string | number; method?: string };

/**
 * `savedq mcp`: the saved queries as MCP tools over standard input and output, for an agent on this
 * machine. Standard output carries protocol messages only. The engine is never held between calls
 * (the user's own `savedq run` does not wait for an agent's session): it is opened for an uncached
 * call and let go when no call is under way, or, while `serve` runs on the data directory, the calls
 * go to it. Resolves when standard input ends (the agent went) and every request has its answer, or
 * on SIGINT/SIGTERM.
 */
export async function mcpCommand(lib: Savedq, options: McpCommandOptions, io: Io): Promise<void> {
  const sdk = await loadSdk();
  let underWay = 0;
  void lib.announce('mcp');
  const server = mcpServer(sdk, {
    lib,
    version: options.version,
    // As the library's own warnings are written (cli.ts's reporter), so an agent's log reads alike.
    log: commandLog(io, options),
    around: async (work) => {
      underWay += 1;
      try {
        return await work();
      } finally {
        underWay -= 1;
        if (underWay === 0) await lib.releaseEngine();
      }
    },
  });
  if (io.stdin.isTTY) io.stderr.write('savedq mcp speaks MCP (JSON-RPC) on standard input and output, for an agent to start: see the README, Agents (MCP). Ctrl-D ends it.\n');
  const transport = new sdk.StdioServerTransport(io.stdin, io.stdout);
  await server.connect(transport);

  // Requests not yet answered: when standard input ends, the answers still due are written first.
  const pending = new Set<string | number>();
  let ended = false;
  const closeWhenDone = () => {
    if (ended && pending.size === 0) void server.close();
  };
  const receive = transport.onmessage;
  transport.onmessage = (message) => {
    const m = message as Message;
    if (m.id !== undefined && m.method !== undefined) pending.add(m.id);
    receive?.(message);
  };
  // A line that is not a JSON-RPC message gets JSON-RPC's answer (id null), as the specification asks;
  // the SDK's transport only tells its onerror, and the agent would wait for an answer that never comes.
  const failed = transport.onerror;
  transport.onerror = (error) => {
    failed?.(error);
    const [code, message] = error instanceof SyntaxError ? [-32700, 'Parse error: a line that is not JSON.'] : [-32600, 'Invalid Request: a line that is not a JSON-RPC message.'];
    void transport.send({ jsonrpc: '2.0', id: null, error: { code, message } } as unknown as Parameters<typeof transport.send>[0]).catch(() => undefined);
  };
  const send = transport.send.bind(transport);
  transport.send = async (message) => {
    await send(message);
    const m = message as Message;
    if (m.id !== undefined && m.method === undefined) {
      pending.delete(m.id);
      closeWhenDone();
    }
  };
  await new Promise<void>((resolve) => {
    const closed = transport.onclose;
    transport.onclose = () => {
      closed?.();
      resolve();
    };
    io.stdin.once('end', () => {
      ended = true;
      closeWhenDone();
    });
    options.signal?.addEventListener('abort', () => void server.close(), { once: true });
  });
  if (options.signal?.aborted) throw options.signal.reason;
}
