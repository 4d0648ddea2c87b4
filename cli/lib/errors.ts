/** Exit codes of every `svc` command (validate uses all of them). */
export const EXIT = {
  ok: 0,
  /** The command ran and found errors, or refused to do what was asked. */
  failed: 1,
  /** `svc validate --strict`: no errors, but warnings. */
  warnings: 2,
  /** Bad command line: unknown command or option, missing or malformed argument. */
  usage: 3,
  /** A file or directory that was named cannot be read (or, for a file to save, written). */
  unreadable: 4,
  /** The server could not be reached (refused, timed out, DNS, TLS). */
  unreachable: 5,
} as const;

/** An expected failure: its message is printed as is (no stack) and the process exits with `exitCode`. */
export class CliError extends Error {
  constructor(message: string, readonly exitCode: number = EXIT.failed) {
    super(message);
  }
}

export const usageError = (message: string) => new CliError(message, EXIT.usage);
