/** A saved query's name: what the command line and URLs address it by. */
export const NAME_PATTERN = /^[a-z0-9][a-z0-9_.-]{0,63}$/;

/** The types a saved query's parameter can have (README, "Parameter types"). */
export const PARAM_TYPES = ['string', 'regex', 'integer', 'number', 'boolean', 'timestamp', 'date', 'string[]'] as const;
export type ParamType = (typeof PARAM_TYPES)[number];

/** The texts a boolean parameter takes, in the order savedq names them, and what each means. */
export const BOOLEAN_TEXTS = [
  ['true', true],
  ['false', false],
  ['1', true],
  ['0', false],
] as const;

/** A declared parameter of a saved query. Every value arrives as text and is checked against its type. */
export interface ParamDefinition {
  readonly name: string;
  readonly type: ParamType;
  readonly description: string;
  /** Required parameters must be present and non-empty. */
  readonly required: boolean;
  /** The values the parameter takes, in their canonical text. */
  readonly allowed?: readonly string[];
  /**
   * What a value outside `allowed` does: `reject` makes it an input error; `default` makes it behave as
   * the default (the spec's "any other value behaves as …").
   */
  readonly other: 'reject' | 'default';
  /** The value used when the parameter is absent or empty, in its canonical text. */
  readonly default?: string;
  /** Bounds of an integer or number parameter, inclusive. */
  readonly min?: number;
  readonly max?: number;
}

/** The JSON types a result field can be documented as, in `list`, `describe` and OpenAPI. */
export const FIELD_TYPES = ['string', 'integer', 'number', 'boolean', 'timestamp', 'date', 'object', 'array'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

/** A field of a result row. */
export interface FieldDefinition {
  readonly name: string;
  readonly type: FieldType;
  readonly description: string;
  /** The line of its file that names it (the shape's check points there). */
  readonly line?: number;
}

/** What a query's statements may cost (`limits:`): each becomes the engine's setting of that name. */
export interface QueryLimits {
  /** max_rows_to_read */
  readonly read_rows?: number;
  /** max_bytes_to_read */
  readonly read_bytes?: number;
  /** max_result_bytes (result_overflow_mode left at throw) */
  readonly result_bytes?: number;
  /** max_threads */
  readonly threads?: number;
}

/** A saved query: one `.sql` file, its YAML header read into data. */
export interface SavedQuery {
  readonly name: string;
  /** A UUID; never changes between versions and machines. */
  readonly id: string;
  /** Its version (`version:`, default 1): raised with a change that breaks its callers (docs/queries.md, "The lock"). */
  readonly version: number;
  /** Whether its file keeps an older version (`<name>@<N>.sql`) rather than the current one. */
  readonly kept?: boolean;
  /** When an older version stops answering (`sunset:`, ms since the epoch): it answers 410 Gone from then. */
  readonly sunsetMs?: number;
  /** Since when an older version is deprecated (`deprecated:`; else its sunset), for the Deprecation header. */
  readonly deprecatedMs?: number;
  readonly description: string;
  readonly params: readonly ParamDefinition[];
  /** The documented row fields; may be empty: then the answer's shape is not checked. */
  readonly fields: readonly FieldDefinition[];
  /** The line of `fields:` in its file (the header's first when it has none). */
  readonly fieldsLine?: number;
  /** The library never returns more rows than this. */
  readonly maxRows: number;
  /** How long a result may be served from the cache; 0 = never cached. */
  readonly cacheSeconds: number;
  /** How old a cached result must be before `warm` refreshes it; 0 = not warmed. */
  readonly warmSeconds: number;
  /** Seconds its runs may take (`timeout:`), below the global --timeout (never above it); absent: the global one. */
  readonly timeoutSeconds?: number;
  /** Whether callers may send their own SQL over its answer (`sandbox: true`, docs/sandboxing.md). */
  readonly sandbox: boolean;
  /**
   * How long past its expiry a cached answer may still be served while no host of the warehouse
   * answers (`stale_if_error:`, default a day; 0: never).
   */
  readonly staleIfErrorSeconds: number;
  /** What its statements may cost (`limits:`), set by savedq on every one of them. */
  readonly limits: QueryLimits;
  /** The file the query was read from. */
  readonly file: string;
  /** Whether it ships with savedq. */
  readonly builtin: boolean;
  /** The SQL as written, after the header. */
  readonly sql: string;
  /** The line of the file the SQL starts on (1-based). */
  readonly sqlLine: number;
  /** The SQL with each `@name` turned into a typed query parameter `{name:Type}`. */
  readonly boundSql: string;
  /**
   * A digest of what decides the result (the SQL, the parameters, the row limit): part of every cache
   * key, so a result of an edited query's old text is never served.
   */
  readonly digest: string;
}

/** Parameters after validation: every declared one, in canonical text, defaults applied, nothing else. */
export type NormalisedParams = Readonly<Record<string, string>>;

/** A result row: field name to JSON value. */
export type Row = Record<string, unknown>;
