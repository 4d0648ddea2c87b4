/**
 * A tag's state as streamed to subscribers, read from the database (the source of truth:
 * broker messages and webhook bodies only say "look again").
 *
 * Read with `loadTagContext` (straight from the database), not the materialization's cached
 * `getTagContext`: the cache may lag a move made by another process by up to its check
 * period, and a stale read here would be taken for "nothing changed" and the UPDATE lost.
 * The registry already reads once per move per process, whatever the number of streams.
 */
import { create, toBinary, type UnknownField } from '@bufbuild/protobuf';
import { BinaryReader } from '@bufbuild/protobuf/wire';
import type { AppContext } from '../../shared/app-context.js';
import { loadTagContext, type TagContext } from '../../core/tags/tag-context.js';
import { ContextMessageSchema } from '../../../gen/proto/context_pb.js';

export interface TagState {
  /** Identity of the state: `bundle_id`, `bundle_version`, `updated_at`. Equal keys are not sent twice. */
  key: string;
  tag: string;
  updatedAt: Date;
  /** The ContextMessage fields shared by every stream (read-only: shared between messages). */
  fields: Omit<TagContext, 'tag' | 'updatedAt'>;
  /**
   * The same fields already in protobuf wire form (encoded once per read, not once per
   * stream): a binary stream attaches them to each message as pre-encoded fields, so a
   * thousand streams cost a thousand copies instead of a thousand encodings.
   */
  encoded: UnknownField[];
  /** The same bytes as one buffer, shared by every stream of the plain gRPC path (subscribe-h2.ts). */
  bytes: Uint8Array;
}

const stateKey = (bundleId: string, bundleVersion: string, updatedAt: Date) => `${bundleId}\u0000${bundleVersion}\u0000${updatedAt.toISOString()}`;

/**
 * The shared fields in wire form, as one "unknown field" entry that protobuf-es writes back
 * verbatim: an entry is written as its tag followed by its raw bytes, so the entry takes the
 * first field's tag and, as its bytes, everything after that tag. The result is exactly the
 * encoding of the shared fields, copied in one piece: about five times cheaper per stream
 * than one entry per field (each entry grows the writer's buffer), and than re-encoding.
 */
export function encodeFields(fields: TagState['fields']): Pick<TagState, 'encoded' | 'bytes'> {
  const encoded = toBinary(ContextMessageSchema, create(ContextMessageSchema, fields));
  const bytes = Buffer.from(encoded.buffer, encoded.byteOffset, encoded.byteLength);
  if (!bytes.length) return { encoded: [], bytes };
  const reader = new BinaryReader(bytes);
  const [no, wireType] = reader.tag();
  return { encoded: [{ no, wireType, data: bytes.subarray(reader.pos) }], bytes };
}

/** Reads the tag's full state; null when the tag does not exist. */
export async function readTagState(ctx: AppContext, tag: string): Promise<TagState | null> {
  const c = await loadTagContext(ctx.db, tag);
  if (!c) return null;
  const updatedAt = c.updatedAt instanceof Date ? c.updatedAt : new Date(c.updatedAt);
  const fields = {
    bundleId: c.bundleId,
    bundleVersion: c.bundleVersion,
    resolvedBundleIds: c.resolvedBundleIds ?? [],
    contextYaml: c.contextYaml ?? '',
    scdIds: c.scdIds ?? [],
    scdContent: c.scdContent ?? {},
  };
  return { key: stateKey(c.bundleId, c.bundleVersion, updatedAt), tag: c.tag, updatedAt, fields, ...encodeFields(fields) };
}

/** The state keys of several tags in one query (the safety poll: cheap, no content). */
export async function readTagKeys(ctx: AppContext, tags: string[]): Promise<Map<string, string>> {
  const rows = await ctx.db.query<{ tag_name: string; bundle_id: string; bundle_version: string; updated_at: Date }>(
    'SELECT tag_name, bundle_id, bundle_version, updated_at FROM tags WHERE tag_name = ANY($1::text[])',
    [tags],
  );
  return new Map(rows.map((r) => [r.tag_name, stateKey(r.bundle_id, r.bundle_version, r.updated_at)]));
}
