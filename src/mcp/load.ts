import { bundleApart } from '../lazy.js';

export type Sdk = typeof import('./sdk.js');

/** The MCP SDK, loaded on first use (a bundle of its own in the CLI). No other command loads it. */
export const loadSdk = bundleApart<Sdk>('mcp.cjs', () => import('./sdk.js'));
