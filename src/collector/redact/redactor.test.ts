import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { NEGATIVES, POSITIVES } from '../../../test/fixtures/collector/redaction-corpus.js';
import { MASK_NO_SECRET, Redactor, maskedKeysColumn } from './redactor.js';

const SECRET = 'test-secret-0123456789';
const hmac = (v: string) => 'hmac-sha256:' + createHmac('sha256', SECRET).update(v).digest('hex');

describe('Redactor', () => {
  const r = new Redactor(SECRET);

  it('replaces e-mail keys whole by the HMAC of the lowercased address', () => {
    const out = r.redactAttributes({ 'user.email': ' Dev@Example.COM ', 'session.id': 's1' });
    expect(out.value['user.email']).toBe(hmac('dev@example.com'));
    expect(out.value['session.id']).toBe('s1');
    expect([...out.maskedKeys]).toEqual(['user.email']);
    expect(out.maskedCount).toBe(1);
  });

  it('masks addresses embedded in free text, at any depth, and in keys', () => {
    const out = r.redactAttributes({
      prompt: 'mail alice.smith+q3@corp.example.org and bob@example.com',
      nested: { list: ['x', { note: 'from 198.51.100.7 and 2001:db8::7' }] },
      'carol@example.net': 1,
    });
    const text = JSON.stringify(out.value);
    expect(text).not.toMatch(/@/);
    expect(text).not.toContain('198.51.100.7');
    expect(text).not.toContain('2001:db8::7');
    expect(out.value.prompt).toBe(`mail ${hmac('alice.smith+q3@corp.example.org')} and ${hmac('bob@example.com')}`);
    expect(out.maskedKeys).toEqual(new Set(['prompt', 'nested', hmac('carol@example.net')]));
    expect(out.maskedCount).toBe(5);
  });

  it('hashes IP keys whole and leaves versions, timestamps and ids alone', () => {
    const out = r.redactAttributes({
      ip_address: '203.0.113.9',
      'net.peer.ip': '::1',
      'service.version': '1.2.3.4',
      'event.timestamp': '2026-01-01T00:00:00.123Z',
      'session.id': '5e7a0c2b-1111-4222-8333-944445555666',
      code: 'std::vector<int>',
      ratio: '10.1.2',
    });
    expect(out.value.ip_address).toBe(hmac('203.0.113.9'));
    expect(out.value['net.peer.ip']).toBe(hmac('::1'));
    expect(out.value['service.version']).toBe('1.2.3.4');
    expect(out.value['event.timestamp']).toBe('2026-01-01T00:00:00.123Z');
    expect(out.value['session.id']).toBe('5e7a0c2b-1111-4222-8333-944445555666');
    expect(out.value.code).toBe('std::vector<int>');
    expect(out.value.ratio).toBe('10.1.2');
    expect(out.maskedCount).toBe(2);
  });

  it('masks extra keys whole and keeps upstream placeholders', () => {
    const keys = new Set(['prompt', 'workspace.host_paths']);
    const out = r.redactAttributes({ prompt: 'secret plan', 'workspace.host_paths': ['/Users/dana'], response: '<REDACTED>' }, { maskKeys: keys, keepValues: new Set(['<REDACTED>']) });
    expect(out.value.prompt).toBe(hmac('secret plan'));
    expect(out.value['workspace.host_paths']).toBe(hmac('["/Users/dana"]'));
    expect(out.value.response).toBe('<REDACTED>');
    expect(maskedKeysColumn(out.maskedKeys)).toBe('["prompt","workspace.host_paths"]');
  });

  it('without a secret, masks without a correlatable hash', () => {
    const out = new Redactor(null).redactAttributes({ 'user.email': 'a@b.example', text: 'x a@b.example y' });
    expect(out.value['user.email']).toBe(MASK_NO_SECRET);
    expect(out.value.text).toBe(`x ${MASK_NO_SECRET} y`);
  });

  it('does not change its input and reports nothing when nothing was masked', () => {
    const input = { a: 'plain', n: 3, b: true, z: null };
    const out = r.redactAttributes(input);
    expect(out.value).toEqual(input);
    expect(out.value).not.toBe(input);
    expect(out.maskedCount).toBe(0);
    expect(maskedKeysColumn(out.maskedKeys)).toBeNull();
  });
});

describe('Redactor: secrets, numbers and obfuscated e-mails (test/fixtures/collector/redaction-corpus.ts)', () => {
  const r = new Redactor(SECRET);

  it.each(POSITIVES.map((p) => [p.kind, p.text, p] as const))('%s: %s is masked and counted', (_kind, _text, p) => {
    const out = r.redactAttributes({ text: p.text, nested: { deep: [p.text] } });
    const expected = p.kind === 'email' ? hmac(p.address!) : `[redacted:${p.kind}]`;
    for (const v of [out.value.text as string, (out.value.nested as { deep: string[] }).deep[0]]) {
      expect(v).toContain(expected);
      expect(v).not.toContain(p.secret);
      expect(v).not.toMatch(/@|%40|\[at\]|\(at\)|&#64;|\uFF20/i);
    }
    expect(out.maskedCount).toBe(2);
    expect(out.maskedKeys).toEqual(new Set(['text', 'nested']));
  });

  it.each(NEGATIVES)('%s is left alone', (text) => {
    const out = r.redactAttributes({ text });
    expect(out.value.text).toBe(text);
    expect(out.maskedCount).toBe(0);
  });

  it('an obfuscated address and the plain one share one pseudonym', () => {
    const out = r.redactAttributes({ a: 'Dana@Example.com', b: 'dana [at] example [dot] com', c: 'dana%40example.com' });
    expect(new Set([out.value.a, out.value.b, out.value.c])).toEqual(new Set([hmac('dana@example.com')]));
  });

  it('keys that name a secret lose their value, at any depth', () => {
    const out = r.redactAttributes({ password: 'hunter2', headers: { authorization: 'whatever-it-is', 'x-api-key': 'k', pin_secret: 1234 }, input_tokens: '12', 'api.token': 'abc', db_password: 123456 });
    expect(out.value).toEqual({
      password: '[redacted:secret]',
      headers: { authorization: '[redacted:secret]', 'x-api-key': '[redacted:secret]', pin_secret: '[redacted:secret]' },
      input_tokens: '12',
      'api.token': '[redacted:secret]',
      db_password: '[redacted:secret]',
    });
    expect(out.maskedCount).toBe(6);
  });
});

describe('Redactor: pseudonymized identifiers (COLLECTOR_PSEUDONYMIZE_ATTRIBUTES)', () => {
  it('replaces the default identifiers by their keyed hash, in strings, numbers and nested maps', () => {
    const r = new Redactor(SECRET);
    const out = r.redactAttributes({
      'user.id': 'u-1',
      'user.account_uuid': ' 7a8b9c0d-0000-4000-8000-000000001234 ',
      'user.account_id': 'user_01X',
      'organization.id': 42,
      'enduser.id': 'e-1',
      'session.id': 's-1',
      resource: { user: { id: 'u-1' } },
    });
    expect(out.value).toEqual({
      'user.id': hmac('u-1'),
      'user.account_uuid': hmac('7a8b9c0d-0000-4000-8000-000000001234'),
      'user.account_id': hmac('user_01X'),
      'organization.id': hmac('42'),
      'enduser.id': hmac('e-1'), // actor_identity stands for every attribute the column is read from
      'session.id': 's-1',
      resource: { user: { id: hmac('u-1') } },
    });
    expect(out.maskedCount).toBe(6);
    expect([...out.maskedKeys].sort()).toEqual(['enduser.id', 'organization.id', 'resource', 'user.account_id', 'user.account_uuid', 'user.id']);
  });

  it('one identifier is one pseudonym across sources; a dotted prefix names nested attributes', () => {
    const r = new Redactor(SECRET);
    const otlp = r.redactAttributes({ 'user.account_id': 'user_01X' });
    const chat = r.redactAttributes({ user_id: 'user_01X', type: 'user_actor' }, { prefix: 'actor.' });
    expect(chat.value.user_id).toBe(otlp.value['user.account_id']);
    expect(chat.value.type).toBe('user_actor');
  });

  it('follows the configured list: other names, or none', () => {
    const custom = new Redactor(SECRET, { pseudonymize: ['session.id'] });
    expect(custom.redactAttributes({ 'session.id': 's-1', 'user.id': 'u-1' }).value).toEqual({ 'session.id': hmac('s-1'), 'user.id': 'u-1' });
    const none = new Redactor(SECRET, { pseudonymize: [] });
    expect(none.redactAttributes({ 'user.account_id': 'user_01X' }).value).toEqual({ 'user.account_id': 'user_01X' });
  });
});
