import stringWidth from 'string-width';
import { lazyRequire } from '../lazy.js';

/** wrap-ansi, from node_modules when prose is first wrapped: no run needs it, so no run's bundle holds it. */
const wrapAnsi = lazyRequire<typeof import('wrap-ansi')>('wrap-ansi');

/**
 * Prose for a terminal (`describe`, `check`): indented by `indent`, one line when it fits in `width`
 * columns (or no width is given: piped, a line a piece, for grep), else wrapped at word breaks with its
 * later lines indented by `hanging` (a word longer than a line cut).
 */
export function wrapped(text: string, indent: number, hanging: number, width: number | undefined): string {
  const fits = width === undefined || stringWidth(text) <= width - indent;
  const lines = fits ? [text] : wrapAnsi()(text, Math.max(20, width - hanging), { hard: true }).split('\n');
  return lines.map((line, i) => `${' '.repeat(i === 0 ? indent : hanging)}${line}`).join('\n');
}
