/**
 * The rows of verify's storage-order read go to the chain checker only while every
 * chain_sequence rises (verify.ts): the first that does not voids the read, and the rest is
 * read through unchecked.
 */
import { int64, type RowHandler } from './copy-binary.js';

export class OrderedRows {
  /** False once a sequence did not rise (ascendingOnly). */
  ascending = true;

  constructor(
    private readonly checker: { row: RowHandler },
    private readonly ascendingOnly: boolean,
    /** The sequence of the row before the first this sees. */
    public prev = -Infinity,
  ) {}

  readonly row: RowHandler = (buf, f) => {
    if (!this.ascendingOnly) return this.checker.row(buf, f);
    if (!this.ascending) return; // read on to the end, unchecked: the caller reads again in chain order
    if (f[1] === 8) {
      const seq = int64(buf, f[0]!);
      if (seq <= this.prev) {
        this.ascending = false;
        return;
      }
      this.prev = seq;
    }
    this.checker.row(buf, f);
  };
}
