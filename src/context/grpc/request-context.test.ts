/** The fast path's hand-written encoding of a RequestContextResponse equals the generated one. */
import { describe, expect, it } from 'vitest';
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import { RequestContextResponseSchema } from '../../../gen/proto/context_pb.js';
import type { ContextOutcome } from '../../core/context/request-context.js';
import { responseMessage, responseParts } from './request-context.js';

const selected = Object.freeze({
  bundleIds: Object.freeze(['bundle:meta:0.2.0', 'bundle:security:0.1.0']) as string[],
  scdIds: Object.freeze(['scd:meta:glossary', 'scd:project:threat-model']) as string[],
  scdContent: Object.freeze({ 'scd:meta:glossary': 'id: scd:meta:glossary\ntitle: Glossary — ünïcode\n', 'scd:project:threat-model': 'x'.repeat(70_000) }),
  scdMembers: [],
  revision: 42,
});

const explanation = {
  selected: {
    'scd:meta:glossary': { reason: 'all_roles' as const, bundle_id: 'bundle:meta', bundle_version: '0.2.0', import_path: ['bundle:p:1.0.0', 'bundle:meta:0.2.0'], override: false },
    'scd:project:threat-model': { reason: 'role' as const, role_id: 'role:security', bundle_id: 'bundle:security', bundle_version: '0.1.0', import_path: ['bundle:p:1.0.0'], override: true },
  },
  excluded: {
    'scd:project:x': { reason: 'other_role' as const, roles: ['role:compliance'], bundle_id: 'bundle:c', bundle_version: '0.1.0', import_path: ['bundle:p:1.0.0'] },
    'scd:project:y': { reason: 'not_imported' as const, referenced_by: ['scd:meta:glossary'] },
  },
};

const common = { requestId: '85951b61-fd53-4f82-81ed-c87e137058a9', leafIndex: 0, taskType: 'code_review', timestamp: 1_795_000_000, processingTimeMs: 3 };

const outcomes: Array<[string, ContextOutcome]> = [
  ['served', { ...common, ok: true, agentId: 'agent:a', roleId: 'role:security', selected }],
  ['served with an explanation', { ...common, ok: true, agentId: 'agent:a', roleId: 'role:security', selected, explanation }],
  ['refused before the agent is known', { ...common, ok: false, agentId: null, roleId: null, code: 'AUTH_FAILED', message: 'Invalid API key' }],
  ['refused with zero fields', { ...common, processingTimeMs: 0, taskType: '', ok: false, agentId: 'agent:a', roleId: 'role:x', code: 'VALIDATION_ERROR', message: 'The request body is invalid' }],
];

describe('RequestContext response encoding', () => {
  it.each(outcomes)('%s: head + selection bytes decode to the full message', (_name, out) => {
    const { head, tail } = responseParts(out);
    const bytes = Buffer.concat([head, tail ?? Buffer.alloc(0)]);
    const decoded = fromBinary(RequestContextResponseSchema, bytes);
    const expected = responseMessage(out);
    expect(decoded).toEqual(expected);
    // And byte for byte once re-encoded (same fields, same values).
    expect(Buffer.from(toBinary(RequestContextResponseSchema, decoded))).toEqual(Buffer.from(toBinary(RequestContextResponseSchema, expected)));
  });
});
