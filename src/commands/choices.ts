/** The shells `savedq completion` writes scripts for. */
export const SHELLS = ['bash', 'zsh', 'fish'] as const;

/** `check` reports as lines of text, or as JSON for tools. */
export const CHECK_FORMATS = ['text', 'json'] as const;

/** `test` reports as lines of text, as JSON for tools, or as JUnit XML for CI systems. */
export const TEST_FORMATS = ['text', 'json', 'junit'] as const;
