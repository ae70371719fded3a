import { nodeCrypto } from '../lazy.js';
import type { ChangeMark, GenerationState } from './types.js';

/** Every key savedq keeps in keyv's table sits under this namespace, after a prefix of its kind. */
export const NAMESPACE = 'savedq';

/** A fresh generation's word. */
export function newWord(): string {
  return `${Date.now().toString(36)}-${nodeCrypto().randomBytes(6).toString('hex')}`;
}

/** A server's generation as a reader takes it: a load whose holder has stopped renewing it is a change of the data. */
export function generationOf(mark: ChangeMark | undefined, now: number): GenerationState {
  if (!mark) return { current: '', loading: false };
  if (!mark.loading) return { current: mark.generation, loading: false };
  return mark.loading.until >= now ? { current: mark.generation, loading: true } : { current: mark.loading.mark, loading: false };
}
