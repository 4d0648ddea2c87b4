import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
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
