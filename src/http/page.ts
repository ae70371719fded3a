import { readFile } from 'node:fs/promises';
import { packageRoot } from '../package.js';

/** serve's page and what it loads: each path's file in dist/page (built by esbuild.config.mjs) and its type. */
const FILES: Readonly<Record<string, readonly [file: string, type: string]>> = {
  '/': ['index.html', 'text/html; charset=utf-8'],
  '/ui/app.js': ['app.js', 'text/javascript; charset=utf-8'],
  '/ui/style.css': ['style.css', 'text/css; charset=utf-8'],
  '/ui/icon.svg': ['icon.svg', 'image/svg+xml'],
};

/**
 * What every answer of the page carries: nothing but this server's own script, style, images and
 * connections (no inline script, no other origin), no guessing of types, no referrer, no framing.
 */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-cache',
};

/** A file of the page: its bytes and its type. */
export interface PageFile {
  readonly body: Buffer;
  readonly type: string;
}

/** The page's paths, and the metric label each answers as. */
export const PAGE_PATHS: ReadonlySet<string> = new Set(Object.keys(FILES));

const read = new Map<string, Promise<PageFile>>();

/** The page's file at `path` (one of PAGE_PATHS), read once and kept. */
export function pageFile(path: string): Promise<PageFile> {
  let file = read.get(path);
  const [name, type] = FILES[path] ?? [];
  if (!file && name !== undefined && type !== undefined) {
    file = readFile(new URL(`dist/page/${name}`, packageRoot)).then((body) => ({ body, type }));
    // A failed read (a package built without its page) is tried again next time, not remembered.
    file.catch(() => read.delete(path));
    read.set(path, file);
  }
  return file ?? Promise.reject(new Error(`no page file for ${path}`));
}
