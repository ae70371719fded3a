import type Keyv from 'keyv';
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

/**
 * A server's generation in keyv, as both backends keep it (`generation:<source>`): read, marked loading
 * by `owner` for `ms` more (its mark kept while it renews), and made new when a load ends.
 */
export const generations = {
  async read(keyv: Keyv, source: string): Promise<GenerationState> {
    return generationOf(await keyv.get<ChangeMark>(`generation:${source}`), Date.now());
  },
  async changing(keyv: Keyv, source: string, owner: string, ms: number): Promise<void> {
    const mark = await keyv.get<ChangeMark>(`generation:${source}`);
    const loading = mark?.loading?.owner === owner ? mark.loading : { owner, until: 0, mark: newWord() };
    await keyv.set(`generation:${source}`, { generation: mark?.generation ?? '', loading: { ...loading, until: Date.now() + ms } } satisfies ChangeMark);
  },
  async changed(keyv: Keyv, source: string): Promise<void> {
    await keyv.set(`generation:${source}`, { generation: newWord() } satisfies ChangeMark);
  },
  /** `cache clear` counted (`signal:cleared`): the others see the count change when they next look. */
  async cleared(keyv: Keyv): Promise<void> {
    await keyv.set('signal:cleared', ((await keyv.get<number>('signal:cleared')) ?? 0) + 1);
  },
};
