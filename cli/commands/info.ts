/** `svc info`: version, runtime, install path, configuration locations. */
import type { CAC } from 'cac';
import { resolveKey, scopeDir, userConfigDir } from '../lib/config.js';
import { usageError } from '../lib/errors.js';
import { json, out } from '../lib/io.js';
import { INSTALL_PATH, SCS_VERSION, VERSION } from '../lib/version.js';

export function registerInfo(cli: CAC): void {
  cli
    .command('info', 'Show version, runtime version, install path and configuration locations')
    .option('-o, --output <format>', 'Output format: text or json', { default: 'text' })
    .action((opts: { output: string }) => {
      const info = {
        version: VERSION,
        scs_version: SCS_VERSION,
        node: process.version,
        platform: `${process.platform}-${process.arch}`,
        install_path: INSTALL_PATH,
        user_config: userConfigDir(),
        project_config: scopeDir('project'),
        api_endpoint: resolveKey('api.endpoint').value ?? null,
      };
      if (opts.output === 'json') return void json(info);
      if (opts.output !== 'text') throw usageError(`--output must be text or json, not '${opts.output}'`);
      out(`svc ${info.version} (SCS ${info.scs_version})`);
      out(`node:           ${info.node} (${info.platform})`);
      out(`install path:   ${info.install_path}`);
      out(`user config:    ${info.user_config}`);
      out(`project config: ${info.project_config ?? '(not inside an svc project)'}`);
      out(`api endpoint:   ${info.api_endpoint}`);
    });
}
