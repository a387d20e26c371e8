// onAbort (src/abort.ts): a listener that cannot miss its abort, whenever it is added.
import { describe, expect, it } from 'vitest';
import { onAbort } from '../../src/abort.js';

describe('onAbort', () => {
  it('acts at once on a signal that aborted before it was listened to', () => {
    const c = new AbortController();
    c.abort();
    let acted = 0;
    {
      using listening = onAbort(c.signal, () => (acted += 1));
      expect(listening).toBeDefined();
    }
    expect(acted).toBe(1);
  });

  it('acts once on a later abort, and not at all after it was disposed', () => {
    const c = new AbortController();
    let acted = 0;
    {
      using listening = onAbort(c.signal, () => (acted += 1));
      expect(listening).toBeDefined();
      c.abort();
      c.abort();
    }
    expect(acted).toBe(1);
    const d = new AbortController();
    {
      using listening = onAbort(d.signal, () => (acted += 1));
      expect(listening).toBeDefined();
    }
    d.abort();
    expect(acted).toBe(1);
    using none = onAbort(undefined, () => (acted += 1));
    expect(none).toBeDefined();
  });
});
