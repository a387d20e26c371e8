// The label of the image's own files (a path in no mount): cfh's own recipes (builtin:,
// toolchain:, a toolchain of package sets and Debian packages) are the operator's choice of
// a known rootfs and are not joined (AH-CFC-7: cfh's own text and configuration are not
// sources). Any other image, a local reference or one built from a Dockerfile and its
// context, may carry anyone's words (a team's dev image COPYs the repository's files), so
// what a run reads of it joins as public and untrusted: no confidentiality, no integrity,
// which under strict takes prompt:direct away from the context (AH-CFC-5).
import type { ImageSource } from '../config/image-schema.js';
import { label, type Label } from './label.js';

/** Undefined: cfh's own recipe, not joined; else the label its files are read under. */
export function imageLabel(image: ImageSource | undefined): Label | undefined {
  if (image === undefined) return undefined;
  if (typeof image === 'string')
    return /^(builtin:[a-z0-9][a-z0-9._-]*|toolchain:[a-z0-9,+.-]+)$/.test(image)
      ? undefined
      : label({});
  return 'dockerfile' in image ? label({}) : undefined;
}
