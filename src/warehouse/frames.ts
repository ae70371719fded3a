import type { Socket } from 'node:net';

// The messages between a `savedq serve` and the processes it shares its engine with (engine-socket.ts, engine-socket-server.ts): on a
// Unix socket, each message a frame of a JSON header and an optional body of bytes (a batch of lines),
// each preceded by its length. Not HTTP: node:http's client and parser, compiled cold, would cost a CLI
// run about what the whole statement takes; plain frames cost little (docs/performance.md).

/** The lengths before each frame: the header's, then the body's. */
const PREFIX = 8;
/** A frame whose header or body claims more than this is refused before any of it is read. */
const MAX_HEADER_BYTES = 1024 * 1024;
const MAX_BODY_BYTES = 256 * 1024 * 1024;

/** Writes a frame; false when the socket asks to wait for 'drain'. */
export function writeFrame(socket: Socket, header: object, body?: Buffer): boolean {
  const json = Buffer.from(JSON.stringify(header));
  const prefix = Buffer.alloc(PREFIX);
  prefix.writeUInt32BE(json.length, 0);
  prefix.writeUInt32BE(body?.length ?? 0, 4);
  socket.cork();
  socket.write(prefix);
  socket.write(json);
  const ok = body && body.length > 0 ? socket.write(body) : true;
  socket.uncork();
  return ok;
}

/**
 * Reads frames from a socket's data as they come whole, calling `onFrame` with each. A frame that
 * cannot be read (a length over the limits, a header that is not JSON) is told to `onBad` with why, and
 * nothing more is read from the socket: its peer is not speaking savedq's frames, and the caller
 * closes the connection. A peer's bytes never throw here.
 */
export function readFrames(socket: Socket, onFrame: (header: unknown, body: Buffer) => void, onBad: (reason: string) => void): void {
  let pending: Buffer[] = [];
  let size = 0;
  let refused = false;
  const take = (n: number): Buffer => {
    const all = pending.length === 1 ? (pending[0] as Buffer) : Buffer.concat(pending, size);
    const taken = all.subarray(0, n);
    const rest = all.subarray(n);
    pending = rest.length > 0 ? [rest] : [];
    size = rest.length;
    return taken;
  };
  const refuse = (reason: string) => {
    refused = true;
    pending = [];
    size = 0;
    onBad(reason);
  };
  let lengths: { header: number; body: number } | undefined;
  socket.on('data', (chunk: Buffer) => {
    if (refused) return;
    pending.push(chunk);
    size += chunk.length;
    while (!refused) {
      if (!lengths) {
        if (size < PREFIX) return;
        const prefix = take(PREFIX);
        lengths = { header: prefix.readUInt32BE(0), body: prefix.readUInt32BE(4) };
        if (lengths.header > MAX_HEADER_BYTES) { refuse(`a frame's header of ${lengths.header} bytes, over the ${MAX_HEADER_BYTES}`); return; }
        if (lengths.body > MAX_BODY_BYTES) { refuse(`a frame's body of ${lengths.body} bytes, over the ${MAX_BODY_BYTES}`); return; }
      }
      if (size < lengths.header + lengths.body) return;
      let header: unknown;
      try {
        header = JSON.parse(take(lengths.header).toString('utf8')) as unknown;
      } catch {
        refuse("a frame's header that is not JSON"); return;
      }
      // The body is copied out of the socket's buffer: it outlives this chunk (a staged batch does).
      const body = Buffer.from(take(lengths.body));
      lengths = undefined;
      onFrame(header, body);
    }
  });
}
