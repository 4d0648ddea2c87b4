/** Every operation of every OpenAPI document, loaded with openapi-backend (dereferenced). */
import path from 'node:path';
import { OpenAPIBackend, type Operation } from 'openapi-backend';
import addFormats from 'ajv-formats';
import { SPEC_DIR } from '../../src/shared/http/service-app.js';
import type { ServiceName } from '../../src/shared/service.js';

const DOCUMENTS: Array<{ file: string; service: ServiceName }> = [
  { file: 'openapi-control-plane.yaml', service: 'api' },
  { file: 'openapi-rules.yaml', service: 'rules' },
  { file: 'openapi-context-webhook.yaml', service: 'context-webhook' },
  { file: 'openapi-telemetry.yaml', service: 'telemetry' },
  { file: 'openapi-collector.yaml', service: 'collector' },
];

export interface LoadedOp {
  service: ServiceName;
  api: OpenAPIBackend;
  op: Operation;
  id: string;
  security: string[];
}

export async function loadOperations(): Promise<LoadedOp[]> {
  const out: LoadedOp[] = [];
  for (const d of DOCUMENTS) {
    const api = new OpenAPIBackend({
      definition: path.join(SPEC_DIR, d.file),
      strict: true,
      validate: true,
      ajvOpts: { strict: false } as any,
      customizeAjv: (ajv) => {
        (addFormats as unknown as (a: unknown) => void)(ajv);
        return ajv;
      },
    });
    await api.init();
    for (const op of api.getOperations()) {
      const security = ((op.security ?? []) as Array<Record<string, unknown>>).flatMap((s) => Object.keys(s));
      out.push({ service: d.service, api, op, id: op.operationId!, security });
    }
  }
  return out;
}
