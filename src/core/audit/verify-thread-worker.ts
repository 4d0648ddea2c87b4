/**
 * Worker-thread entry of verify's checking threads (verify-thread.ts): from the API thread's
 * checker state it reads every row of the rest of a binary COPY stream, checks those of its
 * own blocks (`part` of every `parts` blocks of `block` rows) and passes over the others
 * (ByteChainChecker.pass: their stored hashes seed the next row's check). It acks each
 * segment (the sender's flow control) and answers the end with its checker's state.
 */
import { parentPort } from 'node:worker_threads';
import { ByteChainChecker, N_CHECK_COLUMNS } from './chain-check.js';
import { CopyBinaryReader, CopyFormatError, type RowHandler } from './copy-binary.js';
import { OrderedRows } from './ordered-rows.js';
import type { FromThread, ToThread } from './verify-thread.js';

const port = parentPort!;
let checker: ByteChainChecker | null = null;
let rows: OrderedRows | null = null;
let reader: CopyBinaryReader | null = null;
const post = (m: FromThread) => port.postMessage(m);

port.on('message', (m: ToThread) => {
  try {
    if ('init' in m) {
      const { state, part, parts, block } = m.init;
      const c = (checker = ByteChainChecker.resume(state));
      let k = 0;
      const row: RowHandler = (buf, f) => (Math.floor(k++ / block) % parts === part ? c.row(buf, f) : c.pass(buf, f));
      rows = new OrderedRows({ row }, m.init.ascendingOnly, m.init.prev);
      rows.ascending = m.init.ascending;
      reader = new CopyBinaryReader(N_CHECK_COLUMNS, rows.row, true);
      if (m.init.carry.length) reader.push(Buffer.from(m.init.carry.buffer, m.init.carry.byteOffset, m.init.carry.length));
    } else if ('chunk' in m) {
      reader!.pushRange(Buffer.from(m.chunk), 0, m.length);
      post({ ack: m.id });
    } else {
      reader!.end();
      post({ done: { state: checker!.state(), ascending: rows!.ascending } });
    }
  } catch (e) {
    post({ error: (e as Error).message, format: e instanceof CopyFormatError });
  }
});
post({ ready: true });
