import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * At most `max` HTTP connections, and never all of them held by clients that send nothing whole: a
 * connection past the limit takes the place of the one that has waited longest for a request's
 * headers (a slow client dripping a header line at a time, or an idle kept-alive connection); only
 * when every connection is busy with a request is the new one closed. So clients that reconnect as
 * soon as they are dropped cannot keep out a request that comes whole: it is answered while they wait.
 * Node's own `maxConnections` closes the new connection whatever the others are doing.
 */
export function holdConnections(server: Server, max: number): void {
  // In the order each began to wait for a request: the first waiting one has waited longest.
  const open = new Map<Socket, { waiting: boolean }>();
  const wait = (socket: Socket, waiting: boolean) => {
    if (!open.has(socket)) return;
    open.delete(socket);
    open.set(socket, { waiting });
  };
  server.on('connection', (socket: Socket) => {
    if (open.size >= max) {
      let longest: Socket | undefined;
      for (const [held, state] of open) {
        if (state.waiting) {
          longest = held;
          break;
        }
      }
      if (!longest) {
        socket.destroy();
        return;
      }
      open.delete(longest);
      longest.destroy();
    }
    open.set(socket, { waiting: true });
    socket.once('close', () => open.delete(socket));
  });
  server.on('request', (req, res) => {
    const socket = req.socket;
    wait(socket, false);
    res.once('finish', () => wait(socket, true));
  });
}
