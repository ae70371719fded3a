import { SavedqError } from '../errors.js';

/**
 * Imports what loads SQLite's native module (sqlite3, which @keyv/sqlite loads too): its failure to
 * load as a user should read it, any other failure as it is.
 */
export function loadingSqlite<T>(loading: Promise<T>): Promise<T> {
  return loading.catch((err: unknown) => {
    throw sqliteModuleError(err) ?? err;
  });
}

/**
 * A failure to load SQLite's native module as a user should read it, or undefined for any other
 * failure. The module has no build for this Node, most often because npm ran no install script for
 * it: npm 12 runs only those package.json's `allowScripts` names (savedq's names sqlite3), and a copy
 * of node_modules made for another Node has none that fits. The loader's own error (the `bindings`
 * package's, known by the paths it `tries`) lists a dozen paths and says nothing of what to do.
 */
function sqliteModuleError(err: unknown): SavedqError | undefined {
  // The build's module is there, but this user may not read it (an install of another user's, in a private folder).
  const unreadable = (err as { sqliteModule?: unknown } | null | undefined)?.sqliteModule;
  if (typeof unreadable === 'string') {
    return new SavedqError(`SQLite's native module ${unreadable} cannot be read by this user (uid ${process.getuid?.() ?? '?'}): savedq's install must be readable by whoever runs it.`, { cause: err });
  }
  if (!Array.isArray((err as { tries?: unknown } | null | undefined)?.tries)) return undefined;
  return new SavedqError(`SQLite's native module, sqlite3, has no build for Node ${process.version} here: run npm rebuild sqlite3 where savedq is installed.`, { cause: err });
}
