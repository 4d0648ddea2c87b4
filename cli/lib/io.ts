/** Output helpers. Everything meant for a pipe goes to stdout; diagnostics to stderr. */
export const out = (line = '') => process.stdout.write(line + '\n');
export const err = (line = '') => process.stderr.write(line + '\n');
export const json = (value: unknown) => process.stdout.write(JSON.stringify(value, null, 2) + '\n');
