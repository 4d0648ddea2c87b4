/**
 * The raw command line. mri (under cac) turns option values that look like numbers into
 * numbers (`--version 1.10` becomes 1.1), so options whose text matters are read from here.
 */
let raw: string[] = [];

export const setRawArgs = (args: string[]) => { raw = [...args]; };

/** The last value given for `--name <value>` or `--name=<value>`, as typed. */
export function rawOption(name: string): string | undefined {
  let found: string | undefined;
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] === '--') break;
    if (raw[i] === `--${name}` && i + 1 < raw.length) found = raw[i + 1];
    else if (raw[i].startsWith(`--${name}=`)) found = raw[i].slice(name.length + 3);
  }
  return found;
}

/** Every value given for a repeatable `--name <value>` (or `--name=<value>`), as typed, in order. */
export function rawOptions(name: string): string[] {
  const found: string[] = [];
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] === '--') break;
    if (raw[i] === `--${name}` && i + 1 < raw.length) found.push(raw[++i]);
    else if (raw[i].startsWith(`--${name}=`)) found.push(raw[i].slice(name.length + 3));
  }
  return found;
}
