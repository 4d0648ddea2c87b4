/** The console's page modules, in the order their routes are registered. */
import type { ConsolePages } from '../kit.js';
import { overviewPages } from './overview.js';
import { contentPages } from './content.js';
import { eventsPages } from './events.js';

export const CONSOLE_PAGES: readonly ConsolePages[] = [overviewPages, contentPages, eventsPages];
