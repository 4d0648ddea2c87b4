import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
export { SERVICE_VERSION as VERSION } from '../../src/shared/version.js';

/** The Structured Context Specification version the CLI writes and validates. */
export const SCS_VERSION = '0.3';
/** Where the package is installed (the directory holding bin/, cli/, src/). */
export const INSTALL_PATH = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
