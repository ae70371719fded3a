/**
 * What became of standard output: a reader that goes away (`| head -n 1`) ends savedq's output, quietly,
 * and savedq exits 141 as Unix tools killed by SIGPIPE do; any other failure to write is an error.
 */
const output: { readerGone: boolean; failure?: NodeJS.ErrnoException } = { readerGone: false };

/** Watches standard output for its reader going away, and standard error for being closed. */
export function watchOutput(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') output.readerGone = true;
    else output.failure ??= err;
  });
  // Nothing to be done about a closed standard error but to stop writing to it.
  process.stderr.on('error', () => undefined);
}

/** Whether standard output's reader went away: whatever failed after that, nobody is reading. */
export function readerGone(): boolean {
  return output.readerGone;
}

/** The exit code once standard output has its say: 141 when its reader went away. */
export function afterOutput(code: number, stderr: NodeJS.WritableStream): number {
  if (output.readerGone) return 141;
  if (output.failure && code === 0) {
    stderr.write(`savedq: cannot write the output: ${output.failure.code ?? output.failure.message}.\n`);
    return 1;
  }
  return code;
}
