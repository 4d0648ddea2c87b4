/**
 * The one canonical JSON of the product (RFC 8785, the JSON Canonicalization Scheme), from
 * the `canonicalize` package: objects with their keys sorted by UTF-16 code units, no
 * whitespace, strings escaped and numbers written as ECMAScript's JSON.stringify writes them.
 * It is the text of the audit chain's content_hash fields (core/audit/hash.ts), of the
 * output_hash of agent outputs and of the signed telemetry beacon.
 *
 * Audit hashes already stored were computed with a hand-written function that this replaced
 * (test/fixtures/audit/chain-v1.json holds such records; test/audit/stored-chain.test.ts
 * recomputes them with this one). The two give the same text for every value a stored
 * record can hold: what verify hashes comes from JSON.parse of PostgreSQL's jsonb text or
 * from text columns (objects, arrays, well-formed strings, finite numbers, booleans, null),
 * and on those both sort keys with Array.prototype.sort and write scalars with
 * JSON.stringify. They differ only on values no record can hold, where `canonicalize` throws
 * (NaN, ±Infinity, a lone UTF-16 surrogate), calls a `toJSON` other than Date's or leaves
 * an array's hole empty: the writer normalizes those away before hashing (storableJson in
 * core/audit/hash.ts: a non-finite number becomes null, as JSON and jsonb store it and as
 * the old function wrote it; a hole becomes null; a lone surrogate becomes U+FFFD), agent
 * outputs with lone surrogates are refused, and values parsed from JSON have no holes and
 * no `toJSON`.
 */
import canonicalize from 'canonicalize';

/**
 * RFC 8785 text of `v`; `null` and `undefined` give `null` (the audit chain writes a missing
 * field as null). Throws on what RFC 8785 cannot represent (NaN, ±Infinity, lone
 * surrogates, a bare function or symbol).
 */
export function canonicalJson(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  const text = canonicalize(v);
  if (text === undefined) throw new TypeError('canonicalJson: value is not representable in JSON');
  return text;
}
