import { describe, expect, it } from 'vitest';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { ContextMessageSchema, ContextMessageType } from '../../../gen/proto/context_pb.js';
import { encodeFields } from './tag-state.js';

describe('pre-encoded shared fields', () => {
  it('a message carrying them decodes exactly as the fully encoded message', () => {
    const fields = {
      bundleId: 'bundle:x',
      bundleVersion: '1.2.3',
      resolvedBundleIds: ['bundle:x:1.2.3', 'bundle:meta:0.2.0'],
      contextYaml: 'tag: x:prod\nbundles: [é, 日本]\n',
      scdIds: ['scd:project:a', 'scd:meta:b'],
      scdContent: { 'scd:project:a': 'id: a\ncontent: "ü"\n', 'scd:meta:b': '' },
    };
    const head = { type: ContextMessageType.UPDATE, tag: 'x:prod', sequence: 7n, timestamp: 1_700_000_000_123n };
    const light = create(ContextMessageSchema, head);
    const { encoded, bytes } = encodeFields(fields);
    light.$unknown = encoded;
    const decoded = fromBinary(ContextMessageSchema, toBinary(ContextMessageSchema, light));
    const full = fromBinary(ContextMessageSchema, toBinary(ContextMessageSchema, create(ContextMessageSchema, { ...head, ...fields })));
    expect(decoded).toEqual(full);
    expect(decoded.scdContent).toEqual(fields.scdContent);
    expect(decoded.$unknown).toBeUndefined();
    // The plain buffer is the same encoding: head + shared bytes decode to the same message.
    const headBytes = toBinary(ContextMessageSchema, create(ContextMessageSchema, head));
    const joined = new Uint8Array(headBytes.length + bytes.length);
    joined.set(headBytes);
    joined.set(bytes, headBytes.length);
    expect(fromBinary(ContextMessageSchema, joined)).toEqual(full);
  });
});
