#!/usr/bin/env node
// A small client of `cfh serve --stdio` (docs/operators.md, "Sessions over stdio"): opens a
// session, runs two turns in it, replays its events from a cursor, and closes it. Offline:
// the scripted model of two-turns.yaml answers.
//
//   node examples/session/client.mjs --workspace DIR [--artifact-root DIR] [--script FILE]
//
// Every other argument is passed to `cfh serve --stdio`. Prints one JSON line per turn and
// a summary; exits 0 when the session closed completed.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const args = process.argv.slice(2);
if (!args.includes('--script')) args.push('--script', here('./two-turns.yaml'));
const cfh = process.env.CFH_MAIN ?? here('../../dist/cli/main.js');
const server = spawn(process.execPath, [cfh, 'serve', '--stdio', ...args], {
  stdio: ['pipe', 'pipe', 'inherit'],
});

let nextId = 0;
const waiting = new Map();
const notified = [];
const listeners = new Set();
createInterface({ input: server.stdout }).on('line', (line) => {
  const message = JSON.parse(line);
  if (message.method === undefined && waiting.has(message.id)) {
    waiting.get(message.id)(message);
    waiting.delete(message.id);
    return;
  }
  if (message.method === 'approval/request') {
    // This client approves nothing: every call that asks is denied, bound to its digest.
    send({
      id: message.id,
      result: { argsDigest: message.params.argsDigest, answer: 'deny', why: 'example client' },
    });
    return;
  }
  notified.push(message);
  for (const l of listeners) l(message);
});

function send(message) {
  server.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
}

function call(method, params) {
  nextId += 1;
  const id = nextId;
  return new Promise((resolve, reject) => {
    waiting.set(id, (m) =>
      m.error === undefined
        ? resolve(m.result)
        : reject(Object.assign(new Error(m.error.message), m.error)),
    );
    send({ id, method, params });
  });
}

function notification(method, matches = () => true) {
  const found = notified.find((m) => m.method === method && matches(m.params));
  if (found !== undefined) return Promise.resolve(found.params);
  return new Promise((resolve) => {
    const l = (m) => {
      if (m.method === method && matches(m.params)) {
        listeners.delete(l);
        resolve(m.params);
      }
    };
    listeners.add(l);
  });
}

async function turn(sessionId, prompt) {
  const { turnId } = await call('turn/start', { sessionId, prompt });
  const done = await notification('turn/completed', (p) => p.turnId === turnId);
  console.log(JSON.stringify({ turnId, status: done.status, answer: done.finalAnswer }));
  return done;
}

const opened = await call('session/open', {});
const { sessionId } = opened;
await turn(sessionId, 'What is in the workspace?');
await turn(sessionId, 'Do you remember what you found?');
// A reconnecting client would replay from the last seq it saw; here from the first.
const replay = await call('events/replay', { sessionId, fromSeq: 1 });
const closed = await call('session/close', { sessionId });
server.stdin.end();
await new Promise((resolve) => server.on('exit', resolve));
console.log(
  JSON.stringify({
    sessionId,
    runDir: opened.runDir,
    events: replay.events.length,
    status: closed.status,
    exitCode: server.exitCode,
  }),
);
process.exitCode = closed.status === 'completed' && server.exitCode === 0 ? 0 : 1;
