/**
 * `svc ownership ...` and `svc owners deactivate` against the real API on port 0: a transfer
 * requested, refused without its token, accepted with it (from the environment), one
 * cancelled and one force-assigned, the chain of custody as the API gives it, and a
 * deactivation that starts a transfer to the org admin.
 */
import { mkdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ADMIN_KEY, startTestStack, type TestStack } from '../harness.js';
import { agentOwnedBy, ownerId, ownerOf } from '../ownership/fixtures.js';
import { sandbox } from './helpers.js';

vi.setConfig({ testTimeout: 240_000 });

describe('svc ownership', () => {
  const s = sandbox();
  let t: TestStack;
  let env: Record<string, string>;
  beforeAll(async () => {
    t = await startTestStack({ services: ['api'] });
    env = { SVC_API_ENDPOINT: t.url('api'), SVC_API_KEY: ADMIN_KEY };
    mkdirSync(s.work, { recursive: true });
  });
  afterAll(async () => {
    await t?.close();
    s.cleanup();
  });

  it('requests a transfer (token once), refuses a wrong token, accepts with the token from the environment', async () => {
    const from = ownerId('from');
    const to = ownerId('to');
    const a = await agentOwnedBy(t, from);
    const req = await s.run(['ownership', 'transfer', a.agent_id, '--to', to, '--reason', 'team change', '-o', 'json'], { env });
    expect(req.code, req.stderr).toBe(0);
    const created = JSON.parse(req.stdout);
    expect(created).toMatchObject({ agent_id: a.agent_id, from_owner_id: from, to_owner_id: to, status: 'pending' });
    expect(created.acceptance_token).toMatch(/^ot_/);
    expect(req.stderr).toContain('the acceptance token is shown once');

    const [wrong, none, dup] = await Promise.all([
      s.run(['ownership', 'accept', a.agent_id, created.transfer_id, '--token', 'ot_wrong'], { env }),
      s.run(['ownership', 'accept', a.agent_id, created.transfer_id], { env }),
      s.run(['ownership', 'transfer', a.agent_id, '--to', to, '--reason', 'again'], { env }),
    ]);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/^svc: forbidden: .*\(HTTP 403\)$/m);
    expect(none.code).toBe(3);
    expect(none.stderr).toContain('$SVC_ACCEPTANCE_TOKEN');
    expect(dup.code).toBe(1);
    expect(dup.stderr).toMatch(/^svc: conflict: .*\(HTTP 409\)$/m);
    expect(await ownerOf(t, a.agent_id)).toBe(from);

    const ok = await s.run(['ownership', 'accept', a.agent_id, created.transfer_id], { env: { ...env, SVC_ACCEPTANCE_TOKEN: created.acceptance_token } });
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toBe(`transfer ${created.transfer_id} accepted: ${a.agent_id} is owned by ${to}\n`);
    expect(await ownerOf(t, a.agent_id)).toBe(to);

    const hist = await s.run(['ownership', 'history', a.agent_id, '-o', 'json'], { env });
    expect(hist.code).toBe(0);
    const api = await t.call('api', 'GET', `/api/agents/${a.agent_id}/ownership/history`, { admin: true });
    expect(JSON.parse(hist.stdout)).toEqual(api.body);
    const text = await s.run(['ownership', 'history', a.agent_id], { env });
    expect(text.stdout).toContain(`${a.agent_id} is owned by ${to}`);
    expect(text.stdout).toMatch(/^OWNER\s+FROM\s+UNTIL\s+VIA\s+BY\s+REASON\s+LEAF$/m);
    expect(text.stdout).toContain('transfer_requested > transfer_accepted');
    expect(text.stdout).not.toContain(created.acceptance_token);
  });

  it('cancels one transfer and force-assigns another; a deactivated owner hands its agents to the org admin', async () => {
    const owner = ownerId('leaver');
    const a = await agentOwnedBy(t, owner);
    const b = await agentOwnedBy(t, owner);
    const start = async (agent: string) => JSON.parse((await s.run(['ownership', 'transfer', agent, '--to', ownerId('next'), '--reason', 'r', '-o', 'json'], { env })).stdout);
    const [ta, tb] = await Promise.all([start(a.agent_id), start(b.agent_id)]);
    const [cancel, force] = await Promise.all([
      s.run(['ownership', 'cancel', a.agent_id, ta.transfer_id], { env }),
      s.run(['ownership', 'force-assign', b.agent_id, tb.transfer_id, '--reason', 'owner on leave', '-o', 'json'], { env }),
    ]);
    expect(cancel.code, cancel.stderr).toBe(0);
    expect(cancel.stdout).toBe(`transfer ${ta.transfer_id} cancelled: ${a.agent_id} stays with ${owner}\n`);
    expect(force.code, force.stderr).toBe(0);
    expect(JSON.parse(force.stdout)).toMatchObject({ transfer_id: tb.transfer_id, status: 'force_assigned' });
    expect(await ownerOf(t, b.agent_id)).toBe(tb.to_owner_id);

    const again = await s.run(['ownership', 'cancel', a.agent_id, ta.transfer_id], { env });
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^svc: conflict: /m);

    const d = await s.run(['owners', 'deactivate', owner], { env });
    expect(d.code, d.stderr).toBe(0);
    expect(d.stdout).toMatch(new RegExp(`^owner ${owner.replace(/[.+]/g, '\\$&')} deactivated: 1 transfer\\(s\\) to the org admin started, 0 transfer\\(s\\) to it cancelled$`, 'm'));
    expect(d.stdout).toMatch(new RegExp(`${a.agent_id}\\s+${owner.replace(/[.+]/g, '\\$&')}\\s+org-admin\\s+pending\\s+\\S+\\s+ot_`));
    expect(d.stderr).toContain('shown once');
    const twice = await s.run(['owners', 'deactivate', owner, '-o', 'json'], { env });
    expect(twice.code).toBe(1);
    expect(twice.stdout).toBe('');
  });

  it('usage errors exit 3 and an unknown agent exits 1 naming not_found', async () => {
    const [noTo, unknown, badOut, noSub] = await Promise.all([
      s.run(['ownership', 'transfer', 'agent:x', '--reason', 'r'], { env }),
      s.run(['ownership', 'history', 'agent:nobody-here'], { env }),
      s.run(['ownership', 'history', 'agent:x', '-o', 'yaml'], { env }),
      s.run(['ownership', 'give'], { env }),
    ]);
    expect(noTo.code).toBe(3);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^svc: not_found: .*\(HTTP 404\)$/m);
    expect(badOut.code).toBe(3);
    expect(noSub.code).toBe(3);
    expect(noSub.stderr).toContain("unknown command 'give'");
  });
});
