// The image's own files (cfc/image-label.ts): cfh's own recipes are not joined; any other
// image (a local reference, a Dockerfile build) is read as public and untrusted.
import { describe, expect, it } from 'vitest';
import { imageLabel } from '../../src/cfc/image-label.js';
import { label } from '../../src/cfc/label.js';

describe('the label of an image', () => {
  it("cfh's own recipes are not joined", () => {
    for (const image of [undefined, 'builtin:sandbox', 'toolchain:node,make', { with: ['node'] }])
      expect(imageLabel(image)).toBeUndefined();
  });

  it('any other image is public and untrusted: no integrity to keep prompt:direct', () => {
    for (const image of [
      'cfh-project:abc',
      'builtin:sandbox@evil',
      'toolchain:node; x',
      { dockerfile: 'Dockerfile', context: '.' },
    ])
      expect(imageLabel(image)).toEqual(label({}));
  });
});
