/** The console's page modules, in the order their routes are registered. */
import type { ConsolePages } from '../kit.js';
import { agentPages } from './agents.js';
import { auditPages } from './audit.js';
import { contentPages } from './content.js';
import { eventsPages } from './events.js';
import { overviewPages } from './overview.js';
import { transferPages } from './transfers.js';

export const CONSOLE_PAGES: readonly ConsolePages[] = [overviewPages, agentPages, transferPages, auditPages, contentPages, eventsPages];
