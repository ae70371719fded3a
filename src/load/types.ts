/** A line `load` refused: its number (1-based) and why. */
export interface RejectedLine {
  readonly line: number;
  readonly reason: string;
}

/** What a load did. */
export interface LoadReport {
  /** Rows this load stored. */
  loaded: number;
  /** Rows of its input stored by an earlier load of the same lines, stored again by none. */
  already: number;
  rejected: number;
  /** Lines read, blank ones included. */
  lines: number;
  /** Batches read a second time, line by line, because the fast path refused them. */
  rechecked: number;
}

/** What became of one batch. */
export interface BatchOutcome {
  readonly rejected: RejectedLine[];
  /** Rows of the batch an earlier load stored (the same lines loaded again). */
  readonly already: number;
  /** Whether the batch went through the strict, line-by-line path. */
  readonly rechecked: boolean;
}

/** How a load runs. */
export interface LoadOptions {
  /** Input bytes per insert (the batch ends at the first line end past this many bytes). */
  readonly batchBytes?: number;
  /** Called for each rejected line with its number (1-based) and the reason. */
  readonly onReject?: (line: number, reason: string) => void;
  /** Called after each batch is stored, with the input bytes consumed so far. */
  readonly onProgress?: (report: LoadReport, bytes: number) => void;
  /** When aborted, the load stops before its next batch and throws the abort reason. */
  readonly signal?: AbortSignal | undefined;
  /**
   * The table the rows go into, when not the log table itself: one made `AS` it (the sample, loaded
   * beside the log tables and swapped in whole: library.ts).
   */
  readonly into?: string | undefined;
}

/** An open regular file to load: read straight into reused buffers rather than through a stream. */
export interface FileInput {
  readonly kind: 'file';
  readonly fd: number;
}

/** What a load reads: pieces of the input as they come (a stream, say), or an open file. */
export type LoadInput = AsyncIterable<Buffer | string> | Iterable<Buffer | string> | FileInput;

/** A batch of input lines, as the load stores it. */
export interface Batch {
  readonly lines: Buffer;
  /** The mark its rows carry (a UInt64, as text): from a digest of its lines, so the same lines always get the same one. */
  readonly mark: string;
  /** Lines that are not blank: the rows the batch makes when every line is good. */
  readonly events: number;
  /** Whether every non-blank line looks like one object (starts with `{`, ends with `}`). */
  readonly shaped: boolean;
}
