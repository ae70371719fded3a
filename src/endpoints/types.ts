/** A declared parameter of a saved query. Every value arrives as a string. */
export interface ParamDefinition {
  readonly name: string;
  readonly description: string;
  /** Required parameters must be present and non-empty. */
  readonly required: boolean;
  /** The values the parameter is documented to take. */
  readonly allowed?: readonly string[];
  /**
   * What a value outside `allowed` does: `reject` makes it an input error; `default` makes it behave as
   * the default (the spec's "any other value behaves as …").
   */
  readonly otherValues?: 'reject' | 'default';
  /** The value used when the parameter is absent or empty. */
  readonly default?: string;
  /** How the value is checked and bound: plain text, an ISO 8601 timestamp, or an RE2 pattern. */
  readonly kind: 'string' | 'timestamp' | 'regex';
}

/** The JSON type of a result field, as documented in `list` and OpenAPI. */
export type FieldType = 'string' | 'timestamp' | 'integer' | 'number' | 'object';

/** A field of a result row. */
export interface FieldDefinition {
  readonly name: string;
  readonly type: FieldType;
  readonly description: string;
}

/** A saved query: data, not code. Its SQL lives in `sql/<name>.sql`. */
export interface EndpointDefinition {
  readonly name: string;
  /** Fixed UUID; never changes between versions. */
  readonly id: string;
  readonly description: string;
  readonly params: readonly ParamDefinition[];
  readonly fields: readonly FieldDefinition[];
  /** The library never returns more rows than this. */
  readonly maxRows: number;
  /** How long a result may be served from the cache; 0 = never cached. */
  readonly cacheSeconds: number;
  /** How old a cached result must be before `warm` refreshes it; 0 = not warmed. */
  readonly warmSeconds: number;
}

/** Parameters after validation: every declared one, defaults applied, nothing else. */
export type NormalisedParams = Readonly<Record<string, string>>;

/** A result row: field name to JSON value. */
export type Row = Record<string, unknown>;
