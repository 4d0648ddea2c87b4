/** Request ids: the client's X-Request-Id when it is sane, else a new one. */
import { randomUUID } from 'node:crypto';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The client's X-Request-Id when it is sane (1 to 128 of [A-Za-z0-9._:-]), else a new UUID. */
export function requestIdOf(given: string | null | undefined): string {
  return given && REQUEST_ID.test(given) ? given : randomUUID();
}
