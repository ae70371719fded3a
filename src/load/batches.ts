import { read } from 'node:fs';
import { promisify } from 'node:util';
import { InputError } from '../errors.js';
import { nodeCrypto } from '../lazy.js';
import type { TableName } from '../warehouse/schema.js';

/** A line longer than this (no newline in sight) is refused rather than held in memory. */
const MAX_LINE_BYTES = 64 << 20;
/** Bytes read from a file at a time. */
const READ_BYTES = 4 << 20;
const NEWLINE = 0x0a;

/**
 * Cuts a byte stream into batches of whole lines: each ends at the first newline at or past
 * `batchBytes` from its start. The cut depends only on the content, never on how the stream happened
 * to be chunked, so the same input always gives the same batches (and the same deduplication tokens).
 */
export async function* lineBatches(
  source: AsyncIterable<Buffer | string> | Iterable<Buffer | string>,
  batchBytes: number,
): AsyncGenerator<Buffer> {
  let parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of source) {
    let buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    for (;;) {
      const newline = size + buf.length >= batchBytes ? buf.indexOf(NEWLINE, Math.max(0, batchBytes - 1 - size)) : -1;
      if (newline === -1) break;
      parts.push(buf.subarray(0, newline + 1));
      yield Buffer.concat(parts);
      parts = [];
      size = 0;
      buf = buf.subarray(newline + 1);
    }
    if (buf.length > 0) {
      parts.push(buf);
      size += buf.length;
      if (size > batchBytes + MAX_LINE_BYTES) throw new InputError(`a line is longer than ${MAX_LINE_BYTES >> 20} MiB.`);
    }
  }
  if (size > 0) yield Buffer.concat(parts);
}

const readAt = promisify(read);

/**
 * Cuts an open file into exactly the batches `lineBatches` makes of the same bytes, reading straight
 * into `slots` buffers used in turn, as allocating each batch afresh and copying it together is mostly
 * page faults. `free(slot)` settles once the batch last read into that buffer
 * is done with.
 */
export async function* fileBatches(
  fd: number,
  batchBytes: number,
  slots: number,
  free: (slot: number) => Promise<unknown>,
  readBytes = READ_BYTES,
): AsyncGenerator<{ lines: Buffer; slot: number }> {
  const buffers: Buffer[] = [];
  let carry: Buffer = Buffer.alloc(0); // read past the last cut: the start of the next batch
  let position = 0;
  let eof = false;
  for (let n = 0; !eof || carry.length > 0; n++) {
    const slot = n % slots;
    await free(slot);
    let buffer = buffers[slot];
    if (buffer === undefined || buffer.length < carry.length + readBytes) {
      buffer = buffers[slot] = Buffer.allocUnsafeSlow(Math.max(batchBytes, carry.length) + readBytes);
    }
    let length = carry.copy(buffer);
    let searched = 0;
    let cut = -1;
    for (;;) {
      if (length >= batchBytes) {
        cut = buffer.subarray(0, length).indexOf(NEWLINE, Math.max(searched, batchBytes - 1));
        searched = length;
        if (cut !== -1 || eof) break;
      } else if (eof) {
        break;
      }
      if (length === buffer.length) {
        if (length > batchBytes + MAX_LINE_BYTES) throw new InputError(`a line is longer than ${MAX_LINE_BYTES >> 20} MiB.`);
        const larger = Buffer.allocUnsafeSlow(Math.min(2 * length, batchBytes + MAX_LINE_BYTES + readBytes));
        buffer.copy(larger, 0, 0, length);
        buffer = buffers[slot] = larger;
      }
      const { bytesRead } = await readAt(fd, buffer, length, Math.min(readBytes, buffer.length - length), position);
      position += bytesRead;
      length += bytesRead;
      eof = bytesRead === 0;
    }
    const end = cut === -1 ? length : cut + 1;
    // The buffer is not read into again until its slot comes round: the carry can stay a view of it.
    carry = buffer.subarray(end, length);
    if (end > 0) yield { lines: buffer.subarray(0, end), slot };
  }
}

const isSpace = (byte: number | undefined): boolean => byte === 0x20 || byte === 0x09 || byte === 0x0d;

/**
 * Counts a batch's lines and its blank ones (spaces, tabs and carriage returns only, as sql/load.sql
 * says), and tells whether every other line starts with `{` and ends with `}`.
 */
export function surveyLines(lines: Buffer): { lines: number; blank: number; shaped: boolean } {
  let count = 0;
  let blank = 0;
  let shaped = true;
  let start = 0;
  while (start < lines.length) {
    let end = lines.indexOf(NEWLINE, start);
    if (end === -1) end = lines.length;
    count += 1;
    let first = start;
    while (first < end && isSpace(lines[first])) first += 1;
    if (first === end) {
      blank += 1;
    } else if (shaped) {
      let last = end - 1;
      while (isSpace(lines[last])) last -= 1;
      shaped = lines[first] === 0x7b && lines[last] === 0x7d;
    }
    start = end + 1;
  }
  return { lines: count, blank, shaped };
}

/** The mark a batch's rows carry: the first 64 bits of a digest of its bytes (and of the table's name), as text. */
export function batchMark(table: TableName, lines: Buffer): string {
  const digest = nodeCrypto().createHash('sha256').update(table).update('\0').update(lines).digest('hex');
  return BigInt(`0x${digest.slice(0, 16)}`).toString();
}
