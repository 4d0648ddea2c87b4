/**
 * `svc-server [service...]`: starts every service (default) or the named ones, in one process.
 * Services: api, rules, context-grpc, context-webhook, telemetry, collector.
 */
import { recordEvent, systemActor } from './core/audit/events.js';
import { ConfigError, configWarnings, loadConfig } from './shared/config.js';
import { createLogger } from './shared/logger.js';
import { createAppContext, StartupError } from './shared/app-context.js';
import { LicenseError } from './shared/license.js';
import { MigrationError } from './core/db/migrate.js';
import { SERVICE_NAMES, type ServiceName } from './shared/service.js';
import { startStack } from './launcher.js';

async function main(argv: string[]): Promise<void> {
  const names = argv.length ? argv : SERVICE_NAMES;
  const unknown = names.filter((n) => !SERVICE_NAMES.includes(n as ServiceName));
  if (unknown.length) {
    process.stderr.write(`unknown service(s): ${unknown.join(', ')}; choose from ${SERVICE_NAMES.join(', ')}\n`);
    process.exit(2);
  }
  let config;
  try {
    config = loadConfig(process.env);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`${e.message}\n`);
      process.exit(1);
    }
    throw e;
  }
  const logger = createLogger({ level: config.logLevel });
  if (config.generated.includes('ADMIN_API_KEY')) {
    // Printed once, at the start that generated it; it is stored 0600 in SVC_DATA_DIR.
    process.stdout.write(`\nGenerated admin API key (shown once; stored in ${config.dataDir}/secrets.json):\n  ${config.adminApiKey}\n\n`);
  }
  for (const w of configWarnings(config)) logger.warn(w);
  if (!config.adminKeyring.configured) logger.warn('ADMIN_API_KEY and ADMIN_API_KEYS are empty: admin routes answer 503 Admin API not configured');
  // From here on only the keyring's digests are kept: the plaintext keys leave the process's config.
  config.adminApiKey = '';
  config.adminApiKeys = [];
  let ctx;
  try {
    ctx = await createAppContext(config, { logger });
  } catch (e) {
    if (e instanceof StartupError || e instanceof LicenseError || e instanceof MigrationError) {
      logger.error(`start-up refused: ${e.message}`);
      logger.flush();
      process.exit(1);
    }
    throw e;
  }
  const stack = await startStack(ctx, names as ServiceName[]);
  // Which named admin keys this process accepts, once it started (its start checks passed): a
  // management event at every start, names only.
  if (config.adminKeyring.configured || config.auditorKeyring.configured) {
    const after = { names: [...config.adminKeyring.names], ...(config.auditorKeyring.configured && { auditors: [...config.auditorKeyring.names] }), services: names };
    await ctx.db.tx((db) => recordEvent(db, systemActor('startup'), { event_type: 'admin_keys.loaded', resource_type: 'admin_key', resource_id: 'keyring', after }, ctx.clock.now()));
  }
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('stopping', { signal });
    await stack.close();
    await ctx.close();
    logger.info('stopped', { signal });
    // Lines are written to stderr asynchronously: what is buffered goes out before the exit.
    logger.flush();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  // Logged once the signals are handled: a supervisor that stops the service as soon as it
  // reads this line (a test, a unit's ExecStartPost) gets the graceful stop, not a kill.
  for (const s of Object.values(stack.services)) logger.info('listening', { service: s!.name, url: s!.url });
}

main(process.argv.slice(2)).catch((e) => {
  process.stderr.write(`fatal: ${(e as Error)?.stack ?? e}\n`);
  process.exit(1);
});
