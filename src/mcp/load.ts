import { BUNDLE_LOADER } from '../lazy.js';

export type Sdk = typeof import('./sdk.js');

let sdk: Promise<Sdk> | undefined;

/**
 * The MCP SDK, loaded on first use: from its own bundle in the CLI (compiled from its code cache), else
 * (tests, the library from source) as modules. No other command loads it.
 */
export function loadSdk(): Promise<Sdk> {
  const load = (globalThis as { [BUNDLE_LOADER]?: (bundle: string) => unknown })[BUNDLE_LOADER];
  sdk ??= load ? Promise.resolve(load('mcp.cjs') as Sdk) : import('./sdk.js');
  return sdk;
}
