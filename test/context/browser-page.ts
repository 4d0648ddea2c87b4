/**
 * The script of browser.test.ts's page, bundled by esbuild and run in Chromium: one
 * RequestContext call through each of connect-web's transports (Connect and gRPC-Web, binary
 * and JSON), reported by name. Exposed as `globalThis.runCalls(baseUrl, apiKey)`.
 */
import { createClient, type Transport } from '@connectrpc/connect';
import { createConnectTransport, createGrpcWebTransport } from '@connectrpc/connect-web';
import { ContextService } from '../../gen/proto/context_pb.js';

export type PageResults = Record<string, { success?: boolean; agentId?: string; error?: string }>;

async function runCalls(baseUrl: string, apiKey: string): Promise<PageResults> {
  const transports: Record<string, Transport> = {
    'connect binary': createConnectTransport({ baseUrl, useBinaryFormat: true }),
    'connect json': createConnectTransport({ baseUrl, useBinaryFormat: false }),
    'grpc-web binary': createGrpcWebTransport({ baseUrl, useBinaryFormat: true }),
    'grpc-web json': createGrpcWebTransport({ baseUrl, useBinaryFormat: false }),
  };
  const out: PageResults = {};
  for (const [name, transport] of Object.entries(transports)) {
    try {
      const r = await createClient(ContextService, transport).requestContext({ apiKey, taskType: 'code_review' });
      out[name] = { success: r.success, agentId: r.agentId };
    } catch (e) {
      out[name] = { error: String((e as Error)?.message ?? e) };
    }
  }
  return out;
}

(globalThis as unknown as { runCalls: typeof runCalls }).runCalls = runCalls;
