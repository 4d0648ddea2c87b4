/**
 * Worker-thread entry of `svc audit verify --since`'s record check (record-check-thread.ts):
 * a LeafRecordChecker continuing from the tip it is given checks the entries of each bundle
 * handed over, in order, until the first that fails; it acks each bundle (the sender's flow
 * control, with the failure once there is one) and answers the end with its counts.
 */
import { parentPort } from 'node:worker_threads';
import { LeafRecordChecker } from './record-check.js';
import { entrySpans } from './tile-path.js';
import type { CheckFailure, FromChecker, ToChecker } from './record-check-thread.js';

const port = parentPort!;
let checker: LeafRecordChecker | null = null;
let failure: CheckFailure | null = null;
const post = (m: FromChecker) => port.postMessage(m);

port.on('message', (m: ToChecker) => {
  try {
    if ('init' in m) {
      checker = new LeafRecordChecker(m.init.tip, m.init.chained);
    } else if ('bundle' in m) {
      const { buf, slot, length, base, from } = m.bundle;
      if (!failure) {
        const b = Buffer.from(buf, 0, length);
        const { at, len } = entrySpans(b);
        for (let k = from; k < at.length; k++) {
          const problem = checker!.checkAt(base + k, b, at[k]!, at[k]! + len[k]!);
          if (problem) {
            failure = { leaf: base + k, reason: problem };
            break;
          }
        }
      }
      post({ ack: slot, failure });
    } else {
      post({ done: { requests: checker!.requests, outputs: checker!.outputs, events: checker!.events, failure } });
    }
  } catch (e) {
    post({ error: (e as Error).message });
  }
});
post({ ready: true });
