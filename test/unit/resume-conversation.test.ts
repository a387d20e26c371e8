// The rebuilt context of a resumed run (AH-ART-5, AH-CFC-5): parsed strictly, every tool_use
// paired, the old direct command re-fenced as context; nothing dropped or made up.
import { describe, expect, it } from 'vitest';
import { parseTranscript, refence, unpaired } from '../../src/engine/resume/resume-conversation.js';
import type { TranscriptMessage } from '../../src/evidence/schema/transcript.js';

const user = (text: string): TranscriptMessage => ({
  role: 'user',
  content: [{ type: 'text', text }],
});
const use = (id: string): TranscriptMessage => ({
  role: 'assistant',
  content: [{ type: 'tool_use', id, name: 'exec', input: {} }],
});
const result = (...ids: string[]): TranscriptMessage => ({
  role: 'user',
  content: ids.map((id) => ({
    type: 'tool_result' as const,
    tool_use_id: id,
    content: 'x',
    is_error: false,
  })),
});
const answer: TranscriptMessage = { role: 'assistant', content: [{ type: 'text', text: 'done' }] };
const lines = (ms: TranscriptMessage[]): string => ms.map((m) => `${JSON.stringify(m)}\n`).join('');

describe('resumed transcript', () => {
  it('reads well-formed lines, and refuses a cut-short or foreign one', () => {
    expect(parseTranscript(lines([user('a'), answer]))).toMatchObject({ ok: true });
    expect(parseTranscript(lines([user('a')]).slice(0, -3))).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/cut short/),
    });
    expect(parseTranscript('{"role":"system","content":[]}\n')).toMatchObject({ ok: false });
    expect(parseTranscript('nope\n')).toMatchObject({
      ok: false,
      problem: 'transcript.jsonl:1: not JSON',
    });
  });

  it.each<[string, TranscriptMessage[], RegExp | undefined]>([
    ['paired', [user('a'), use('t1'), result('t1'), answer], undefined],
    ['unanswered at the end', [user('a'), use('t1')], /t1 has no tool_result/],
    ['answered late', [user('a'), use('t1'), user('b'), result('t1')], /t1 has no tool_result/],
    ['a result nobody asked for', [user('a'), answer, result('t9')], /which no tool_use asked/],
    ['answered twice', [user('a'), use('t1'), result('t1', 't1')], /answered twice/],
    ['an id reused', [user('a'), use('t1'), result('t1'), use('t1'), result('t1')], /used twice/],
    ['empty', [], /no message/],
    ['begins with the model', [answer], /first message/],
  ])('%s', (_name, messages, problem) => {
    const got = unpaired(messages);
    if (problem === undefined) expect(got).toBeUndefined();
    else expect(got).toMatch(problem);
  });

  it('re-fences the old direct command as context, with no direct-command tag left', () => {
    const fenced = refence([user('<direct-command>\nwrite x\n</direct-command>'), answer], 'R1');
    expect(fenced.ok).toBe(true);
    if (!fenced.ok) return;
    const text = (fenced.messages[0]?.content[0] as { text: string }).text;
    expect(text.startsWith('<context>\n')).toBe(true);
    expect(text).toContain('write x');
    expect(text).toContain('run R1');
    expect(text).not.toMatch(/<\s*\/?\s*direct-command/i);
    // The model's own messages are kept as they were.
    expect(fenced.messages[1]).toEqual(answer);
  });

  it("refuses a direct-command tag that is not the loop's fence", () => {
    expect(refence([user('see <direct-command> here')], 'R1')).toMatchObject({ ok: false });
    expect(
      refence([user('<direct-command>\na <direct-command> b\n</direct-command>')], 'R1'),
    ).toMatchObject({ ok: false });
  });
});
