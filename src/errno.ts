import { statSync } from 'node:fs';
import { dirname } from 'node:path';

/** What a file or socket operation's failure says to a person, by its errno code: the one place such text is made. */
const TEXT: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EISDIR: 'a directory',
  ENOTDIR: 'a parent is not a directory',
  EEXIST: 'it already exists',
  EADDRINUSE: 'the address is in use',
  EADDRNOTAVAIL: 'no such address on this machine',
  ENOSPC: 'no space left on the device',
  EROFS: 'a read-only file system',
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection closed',
  ENOTFOUND: 'host not found',
  EHOSTUNREACH: 'host unreachable',
  ETIMEDOUT: 'connection timed out',
};

/**
 * A failure's errno code as a few words ("permission denied"); `ENOENT` says what is missing (a file, a
 * folder). A failure with no code is its message.
 */
export function errnoText(err: unknown, missing: 'file' | 'folder' = 'file'): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOENT') return missing === 'folder' ? 'no such directory' : 'no such file';
  if (code === 'ENOTDIR' && missing === 'folder') return 'not a directory';
  if (code !== undefined) return TEXT[code] ?? code;
  return err instanceof Error ? err.message : String(err);
}

/**
 * Why a file cannot be written at `path`: its failure's words, and for a folder that said it has no such
 * entry, which it is: there is no such folder, or one that makes no files (/proc, /sys).
 */
export function cannotWriteText(err: unknown, path: string): string {
  if ((err as NodeJS.ErrnoException | undefined)?.code !== 'ENOENT') return errnoText(err, 'file');
  const folder = dirname(path);
  return statSync(folder, { throwIfNoEntry: false })?.isDirectory() === true ? `no file can be made in ${folder}` : `there is no folder ${folder}`;
}
