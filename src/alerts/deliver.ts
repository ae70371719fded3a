import { spawn } from 'node:child_process';
import type { Target } from './spec.js';

/** A webhook that has not answered in this long has failed (docs/alerts.md). */
const WEBHOOK_TIMEOUT_MS = 10_000;
/** A command that has not ended in this long is stopped, and has failed. */
const COMMAND_TIMEOUT_MS = 60_000;
/** A notification is tried until it is delivered or this long has passed since it was decided. */
export const DELIVERY_WINDOW_MS = 24 * 3_600_000;

/** When to try a notification again after its `attempts`th failure: 1, 2, 4 … minutes, then every hour. */
export function retryDelayMs(attempts: number): number {
  return Math.min(60_000 * 2 ** Math.max(0, attempts - 1), 3_600_000);
}

/** What a failed delivery says: one line, never the webhook's address (it may hold a secret). */
class DeliveryFailure extends Error {}

/**
 * Sends one notification: a webhook gets it as a POST of JSON (2xx is delivered; a redirect is not
 * followed, so the alert's words go nowhere its author did not write); a command gets it on its
 * standard input (exit 0 is delivered). Throws a DeliveryFailure.
 */
export async function deliver(target: Target, payload: string, env: Readonly<Record<string, string | undefined>>, userAgent: string): Promise<void> {
  if ('webhook' in target) return postWebhook(target.webhook, payload, userAgent);
  return runCommand(target.command, payload, env);
}

async function postWebhook(url: string, payload: string, userAgent: string): Promise<void> {
  let res: Response;
  try {
    const id = (JSON.parse(payload) as { id?: string }).id;
    res = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'User-Agent': userAgent, ...(id ? { 'Idempotency-Key': id } : {}) },
      body: payload,
      redirect: 'manual',
      signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
    });
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    if (e.name === 'TimeoutError') throw new DeliveryFailure(`no answer in ${WEBHOOK_TIMEOUT_MS / 1000} s`);
    // fetch's own message is "fetch failed"; its cause says why (and names at most the host).
    throw new DeliveryFailure(e.cause?.code ?? e.cause?.message ?? e.message);
  }
  // The body is read and dropped, so the connection can be used again.
  await res.arrayBuffer().catch(() => undefined);
  if (res.status < 200 || res.status > 299) throw new DeliveryFailure(`answered ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`);
}

function runCommand(argv: readonly string[], payload: string, env: Readonly<Record<string, string | undefined>>): Promise<void> {
  const [program, ...args] = argv;
  const { alert, new_state: state } = JSON.parse(payload) as { alert?: string; new_state?: string };
  return new Promise((resolve, reject) => {
    const child = spawn(program as string, args, {
      stdio: ['pipe', 'ignore', 'pipe'],
      env: { ...env, SAVEDQ_ALERT: alert ?? '', SAVEDQ_ALERT_STATE: state ?? '' },
      timeout: COMMAND_TIMEOUT_MS,
      killSignal: 'SIGKILL',
    });
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      if (stderr.length < 500) stderr += chunk;
    });
    // A command that does not read its input is no failure of the notification's.
    child.stdin.on('error', () => undefined);
    // One line of JSON: a command that appends what it reads (`cat >> alerts.ndjson`) keeps a line each.
    child.stdin.end(`${payload}\n`);
    child.once('error', (err: NodeJS.ErrnoException) => reject(new DeliveryFailure(err.code === 'ENOENT' ? `no program ${program} on the PATH` : err.message)));
    child.once('close', (code, signal) => {
      if (code === 0) { resolve(); return; }
      const said = stderr.trim().split('\n').pop()?.slice(0, 200);
      const how = signal === 'SIGKILL' ? `did not end in ${COMMAND_TIMEOUT_MS / 1000} s` : signal ? `ended by ${signal}` : `exited with ${code}`;
      reject(new DeliveryFailure(`${program} ${how}${said ? `: ${said}` : ''}`));
    });
  });
}
