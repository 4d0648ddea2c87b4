/**
 * The fields of a bundle being created, shared by `bundle create` and its prompts (its own
 * file so that the prompts, loaded lazily by the command, do not import the command back).
 */
import type { BundleType } from '../../src/core/scs/index.js';

export interface BundleFields {
  type?: BundleType; id?: string; title?: string; description?: string;
  scds?: string[]; imports?: string[]; version?: string; rationale?: string; out?: string;
}
