/** The console's page modules, in the order their routes are registered. */
import type { ConsolePages } from '../kit.js';
import { overviewPages } from './overview.js';
import { auditPages } from './audit.js';

export const CONSOLE_PAGES: readonly ConsolePages[] = [overviewPages, auditPages];
