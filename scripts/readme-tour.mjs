// The README's tour, run as written: scripts/readme-tour.sh starts this with Node 22, the
// capsid binary first on PATH and the MCP Inspector in npx's cache.
//
// Usage: node scripts/readme-tour.mjs <README.md> <output folder>
//
// The commands come from the README itself: every ```sh block of the sections named in
// SECTIONS carries a marker on the line before it, `<!-- tour: <id> -->` (run it) or
// `<!-- tour-skip: <reason> -->` (say why not); a block without one fails the run. A block's
// commands (a line, with `\` continuations) are steps `<id>` or `<id>.<n>`. The only changes
// made to them: the `serve` step listens on a free port (CAPSID_LISTEN=127.0.0.1:0, read back
// from its banner) in a fresh folder (the working directory, so ./capsid-data is new), and
// `127.0.0.1:8787` in every later command becomes that port. The later steps run in order in
// one POSIX shell (`sh`, so a function or export made by one step holds for the next, as in
// the reader's second terminal), each step's stdout, stderr and exit status kept apart.
//
// Every step has a check in CHECKS below: its exit status, and the shape of what it printed
// (objects must have exactly the keys listed, values the types or values listed). A step
// without a check, or a check without a step, fails the run, so the README and this script
// cannot drift apart. Results: <output folder>/steps/<step>.{out,err,rc}, serve.{out,err}.

import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const SECTIONS = ['## Five-minute tour', '## When something is wrong', '## Checkmarks and the Handler API'];
const README_PORT = '127.0.0.1:8787';

const [readmePath, outArg] = process.argv.slice(2);
if (!readmePath || !outArg) {
  console.error('usage: readme-tour.mjs <README.md> <output folder>');
  process.exit(2);
}
const out = resolve(outArg);
const say = (msg) => console.log(`readme-tour: ${msg}`);
const fail = (msg) => {
  console.error(`readme-tour: FAILED: ${msg}`);
  process.exit(1);
};

// --- the README's commands ------------------------------------------------------------------

/** The marked ```sh blocks of SECTIONS, in order: {id | skip, line, commands}. */
function tourBlocks(text) {
  const lines = text.split('\n');
  const blocks = [];
  let inSection = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.startsWith('## ')) inSection = SECTIONS.includes(line.trim());
    if (!inSection || !line.startsWith('```sh')) continue;
    let j = i - 1;
    while (j >= 0 && lines[j].trim() === '') j--;
    const marker = lines[j] ?? '';
    const run = marker.match(/^<!-- tour: ([a-z0-9-]+) -->$/);
    const skip = marker.match(/^<!-- tour-skip: (.+) -->$/);
    if (!run && !skip) {
      fail(`README line ${i + 1}: this sh block has no <!-- tour: <id> --> or <!-- tour-skip: <reason> --> line before it`);
    }
    const start = i + 1;
    const body = [];
    for (i++; i < lines.length && !lines[i].startsWith('```'); i++) body.push(lines[i]);
    const commands = [];
    for (let k = 0; k < body.length; k++) {
      let cmd = body[k];
      while (cmd.endsWith('\\') && k + 1 < body.length) cmd += '\n' + body[++k];
      if (cmd.trim() !== '' && !cmd.trim().startsWith('#')) commands.push(cmd);
    }
    blocks.push({ id: run?.[1], skip: skip?.[1], line: start, commands });
  }
  return blocks;
}

const blocks = tourBlocks(readFileSync(readmePath, 'utf8'));
const steps = [];
for (const b of blocks) {
  if (b.skip) {
    say(`not run (README line ${b.line}: ${b.skip}): ${b.commands[0].split('\n')[0]}`);
    continue;
  }
  b.commands.forEach((command, n) => {
    steps.push({ id: b.commands.length === 1 ? b.id : `${b.id}.${n + 1}`, command });
  });
}
const ids = steps.map((s) => s.id);
if (new Set(ids).size !== ids.length) fail(`two README blocks share a tour id: ${ids.join(', ')}`);
if (ids[0] !== 'serve') fail(`the tour must start with its \`serve\` block, not ${ids[0]}`);

// --- checking what a step printed -------------------------------------------------------------

/** `value` against `pattern`: a constructor (type), RegExp, function (predicate), array of one
 * pattern (every item), object (exactly these keys), or a literal. */
function shape(value, pattern, path = '$') {
  const bad = (why) => {
    throw new Error(`${path}: ${why}, got ${JSON.stringify(value)?.slice(0, 300)}`);
  };
  if (pattern === String || pattern === Number || pattern === Boolean) {
    if (typeof value !== pattern.name.toLowerCase()) bad(`expected a ${pattern.name.toLowerCase()}`);
  } else if (pattern instanceof RegExp) {
    if (typeof value !== 'string' || !pattern.test(value)) bad(`expected a string matching ${pattern}`);
  } else if (typeof pattern === 'function') {
    if (!pattern(value)) bad(`fails ${pattern.toString()}`);
  } else if (Array.isArray(pattern)) {
    if (!Array.isArray(value)) bad('expected an array');
    if (pattern.length === 0 && value.length !== 0) bad('expected an empty array');
    value.forEach((item, i) => shape(item, pattern[0], `${path}[${i}]`));
  } else if (pattern !== null && typeof pattern === 'object') {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) bad('expected an object');
    const want = Object.keys(pattern).sort();
    const got = Object.keys(value).sort();
    if (want.join() !== got.join()) bad(`expected exactly the keys ${want.join(', ')}`);
    for (const key of want) shape(value[key], pattern[key], `${path}.${key}`);
  } else if (value !== pattern) {
    bad(`expected ${JSON.stringify(pattern)}`);
  }
}

const json = (text, what) => {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`${what} is not JSON (${e.message}): ${text.slice(0, 300)}`);
  }
};
/** A tool result as the Inspector prints it, with the text Capsid returned read as JSON. */
const toolResult = (text, isError = false) => {
  const r = json(text, 'the Inspector output');
  const { structuredContent, ...rest } = r;
  shape(rest, { content: [{ type: 'text', text: String }], isError });
  if (r.content.length !== 1) throw new Error(`expected one content block, got ${r.content.length}`);
  if (structuredContent === undefined) {
    return isError ? r.content[0].text : json(r.content[0].text, 'the tool result text');
  }
  // A typed tool also answers structuredContent: the text item's JSON, or {result: it} when
  // the answer is not an object. Either way it must say exactly what the text says.
  const parsed = json(r.content[0].text, 'the tool result text');
  const same = (a, b) => JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b));
  if (!same(structuredContent, parsed) && !same(structuredContent, { result: parsed })) {
    throw new Error(`structuredContent differs from the text item: ${JSON.stringify(structuredContent).slice(0, 300)}`);
  }
  return isError ? r.content[0].text : parsed;
};
/** `v` with every object's keys in order, so two JSON values compare by content. */
const sortKeys = (v) => Array.isArray(v)
  ? v.map(sortKeys)
  : v !== null && typeof v === 'object'
    ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys(v[k])]))
    : v;
const hex64 = /^[0-9a-f]{64}$/;
const instant = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;
const created = (path, bytes) => ({
  namespace: 'demo', path, action: 'created', mode: 'replace', sha256: hex64, bytes, snapshotted: false,
});
const searchHit = {
  count: 1, limit: 25, truncated: false,
  documents: [{
    id: Number, namespace: 'demo', path: 'core.md', title: 'Core', type: 'note', status: 'published',
    updated_at: instant, snippet: (s) => typeof s === 'string' && s.includes('[widgets]'),
  }],
};
// The checkmarks section: the tour's agent `me` in `demo`, first working (a global entry),
// then paused on a question that the tour answers and resumes.
const QUESTION = 'Postgres or SQLite for the cache?';
const ANSWER = 'Postgres: the cache is shared by replicas.';
const SUMMARY = 'Widgets now ship in two sizes.';
const entry = (status, fields) => ({
  id: Number, namespace: 'demo', agent: 'me', created_at: instant, status, session_id: null,
  summary: null, decisions: null, question: null, answer: null, answered_by: null, answered_at: null,
  visibility: 'project', push_sha: null, ci_status: 'not_applicable', ci_checked_at: null,
  job_id: null, cost_usd: null, turns: null, ...fields,
});
const globalEntry = entry('working', { summary: SUMMARY, visibility: 'global' });
const pausedEntry = entry('paused_for_input', { question: QUESTION });
const answeredEntry = entry('paused_for_input', {
  question: QUESTION, answer: ANSWER, answered_by: 'agent:owner', answered_at: instant,
});
const checkmark = (status, fields) => ({
  id: Number, namespace: 'demo', agent: 'me', status, checkpoint_at: instant,
  where_it_stopped: null, next_steps: [], open_question: null, answer: null, answered_by: null,
  answered_at: null, tests_status: 'unknown', tested_at: null, build_status: 'unknown',
  built_at: null, job_id: null, log_entry_id: Number, summary: null, session_id: null,
  resume: null, ...fields,
});
const pausedMark = checkmark('paused_for_input', { where_it_stopped: 'choosing a store', open_question: QUESTION });
const sharedEntry = { key: 'staging-url', value: 'https://staging.example.com', set_by: 'agent:me', updated_at: instant };
const apiJson = (r) => json(r.out, 'the Handler API answer');
const quiet = (r) => {
  if (r.out !== '') throw new Error(`expected no output, got ${r.out.slice(0, 300)}`);
};

const CHECKS = {
  mint: (r) => {
    quiet(r);
    shape(r.key, /^capsid_agent_[0-9a-f]{64}$/, 'CAPSID_KEY');
  },
  register: (r) => {
    const m = r.out.match(/^registered demo: (.*)\n$/);
    if (!m) throw new Error(`expected "registered demo: [...]", got ${r.out}`);
    shape(json(m[1], 'the repository list'), [{ repo: 'you/demo', label: 'primary' }]);
  },
  inspector: (r) => {
    const list = json(r.out, 'the Inspector output');
    shape(list, { tools: [(t) => typeof t.name === 'string' && t.inputSchema?.type === 'object'] });
    const names = list.tools.map((t) => t.name);
    for (const name of ['read', 'write', 'search', 'brief', 'history', 'jobs']) {
      if (!names.includes(name)) throw new Error(`tools/list lacks ${name}: ${names.join(', ')}`);
    }
  },
  'documents.1': quiet,
  'documents.2': (r) => shape(toolResult(r.out), created('core.md', 30)),
  'documents.3': (r) => shape(toolResult(r.out), searchHit),
  'documents.4': (r) => shape(toolResult(r.out), {
    namespace: 'demo', conventions: null, repo_structure: null,
    core: {
      namespace: 'demo', path: 'core.md', title: 'Core', type: 'note',
      body: 'The demo project uses widgets.', updated_at: instant, last_actor: 'agent:me',
    },
    open_tasks: [], recent_episodics: [], core_links: { outgoing: [], incoming: [] }, approx_chars: 30,
  }),
  curl: (r) => {
    const reply = json(r.out, 'the curl output');
    shape(reply, { jsonrpc: '2.0', id: 1, result: (v) => v !== null && typeof v === 'object' });
    shape(toolResult(JSON.stringify(reply.result)), searchHit);
  },
  'prompt.1': (r) => shape(toolResult(r.out), created('prompts/review.md', 50)),
  'prompt.2': (r) => shape(json(r.out, 'the Inspector output'), {
    description: 'Review a change',
    messages: [{
      role: 'user',
      content: {
        type: 'resource',
        resource: {
          uri: 'capsid://demo/prompts/review.md', mimeType: 'text/markdown',
          text: 'Review PR-12 against the conventions of demo.',
        },
      },
    }],
  }),
  'checkpoint.1': (r) => shape(toolResult(r.out), {
    checkmark_id: Number, log_entry_id: Number,
    checkmark: checkmark('working', { summary: SUMMARY }), log_entry: globalEntry,
  }),
  'checkpoint.2': (r) => shape(toolResult(r.out), {
    checkmark_id: Number, log_entry_id: Number, checkmark: pausedMark, log_entry: pausedEntry,
  }),
  'api.1': (r) => shape(apiJson(r), {
    projects: [{
      namespace: 'demo', repos: [{ repo: 'you/demo', label: 'primary' }], created_at: instant, unconsolidated: Number,
      root_dir: null, remote: 'you/demo', credential_ref: null,
    }],
  }),
  'api.2': (r) => shape(apiJson(r), {
    namespace: 'demo', count: 1, limit: 500, truncated: false, agents: [pausedMark], never_checkpointed: [],
  }),
  'api.3': (r) => shape(apiJson(r), { namespace: 'demo', agent: 'me', checkmark: pausedMark }),
  'answer.1': quiet,
  'answer.2': (r) => shape(apiJson(r), {
    action: 'answer', resumed: true,
    checkmark: checkmark('working', {
      where_it_stopped: 'choosing a store', open_question: QUESTION, answer: ANSWER,
      answered_by: 'agent:owner', answered_at: instant,
      resume: { requested_at: instant, requested_by: 'agent:owner', answer: ANSWER, session_id: null },
    }),
    log_entry: answeredEntry,
  }),
  'answer.3': (r) => {
    const log = apiJson(r);
    shape(log, {
      namespace: 'demo', agent: 'me', count: 2, limit: 5, truncated: false, next_cursor: null,
      entries: [(e) => e.status === 'paused_for_input' || e.visibility === 'global'],
    });
    shape(log.entries[0], answeredEntry, '$.entries[0]');
    shape(log.entries[1], globalEntry, '$.entries[1]');
  },
  'shared.1': (r) => shape(apiJson(r), {
    namespace: null, visibility: 'global', count: 1, limit: 20, truncated: false, next_cursor: null,
    entries: [globalEntry],
  }),
  'shared.2': (r) => shape(apiJson(r), { error: { code: 'forbidden', message: /can_write_shared/ } }),
  'shared.3': (r) => {
    if (!/^updated me /.test(r.out)) throw new Error(`expected "updated me ...", got ${r.out}`);
  },
  'shared.4': (r) => shape(apiJson(r), { action: 'set', entry: sharedEntry, previous: null }),
  'shared.5': (r) => shape(apiJson(r), { count: 1, limit: 500, truncated: false, entries: [sharedEntry] }),
  'promote.1': (r) => shape(apiJson(r), { action: 'promote', log_entry: { ...answeredEntry, visibility: 'global' } }),
  'promote.2': (r) => {
    const feed = apiJson(r);
    shape(feed, {
      namespace: null, visibility: 'global', count: 2, limit: 20, truncated: false, next_cursor: null,
      entries: [(e) => e.visibility === 'global'],
    });
    shape(feed.entries[0], { ...answeredEntry, visibility: 'global' }, '$.entries[0]');
    shape(feed.entries[1], globalEntry, '$.entries[1]');
  },
  // The one-time link points where the server answers (it records its URL at start, so the
  // link carries the tour's port, not the README's), opens a console session followed once
  // with curl (303 with the session cookie), and the console greets the local owner.
  console: (r) => {
    const m = r.out.match(/^Open this link to sign in to the console as cli:\S+ \(once, until \d{4}-\d\d-\d\dT[\d:.]+Z\):\n\n {2}(http:\/\/127\.0\.0\.1:(\d+)\/console\/login\?token=capsid_cl_[0-9a-f]{64})\n\n$/);
    if (!m) throw new Error(`expected the one-time link, got ${r.out}`);
    if (m[2] !== String(port)) throw new Error(`the link points at port ${m[2]}, not where the server answers (${port})`);
    const link = m[1];
    const open = spawnSync('curl', ['-s', '-o', '/dev/null', '-D', '-', link], { encoding: 'utf8' });
    if (!/^HTTP\/1\.1 303/.test(open.stdout)) throw new Error(`the link answered ${open.stdout}`);
    const cookie = open.stdout.match(/^set-cookie: (capsid_console=[0-9a-f]{64});/im);
    if (!cookie) throw new Error(`the link set no session cookie: ${open.stdout}`);
    const page = spawnSync('curl', ['-s', '-H', `Cookie: ${cookie[1]}`, `http://127.0.0.1:${port}/console`], { encoding: 'utf8' });
    if (!/signed in as <strong>cli:[^<]+<\/strong>/.test(page.stdout)) throw new Error('the console did not open');
    const again = spawnSync('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', link], { encoding: 'utf8' });
    if (again.stdout !== '403') throw new Error(`the link opened twice (${again.stdout})`);
  },
  'wrong-key': (r) => {
    const [head, body] = r.out.split(/\r?\n\r?\n/, 2);
    if (!/^HTTP\/1\.1 401 /.test(head)) throw new Error(`expected HTTP 401, got ${head.split('\n')[0]}`);
    const challenge = head.split(/\r?\n/).find((l) => /^www-authenticate:/i.test(l)) ?? '';
    if (!challenge.includes('realm="capsid-operator"') || !challenge.includes('error="invalid_token"')) {
      throw new Error(`expected a Bearer challenge with error="invalid_token", got "${challenge}"`);
    }
    shape(json(body, 'the 401 body'), { error: 'invalid_token', error_description: /^the bearer key was not recognised/ });
  },
};
// Checks of the tour beyond what the README shows: the Inspector's strict schema check of
// every tool the tour's agent sees, with the README's own `I` function.
const EXTRA = [
  {
    id: 'extra-strict-schemas',
    command: 'I --method tools/list --strict',
    check: (r) => {
      json(r.out, 'the Inspector output');
      if (/warning|error/i.test(r.err)) throw new Error(`the strict schema check complains:\n${r.err}`);
    },
  },
];

for (const s of steps.slice(1)) if (!CHECKS[s.id]) fail(`README step ${s.id} has no check in scripts/readme-tour.mjs: ${s.command}`);
for (const id of Object.keys(CHECKS)) if (!ids.includes(id)) fail(`scripts/readme-tour.mjs checks step ${id}, which the README no longer has`);

// --- running it ------------------------------------------------------------------------------

rmSync(out, { recursive: true, force: true });
const work = join(out, 'work');
const home = join(out, 'home');
const stepsDir = join(out, 'steps');
for (const d of [work, home, stepsDir]) mkdirSync(d, { recursive: true });
// The reader's environment: nothing of capsid's configured, a home of its own (the Inspector
// writes ~/.mcp-inspector).
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('CAPSID_')));
env.HOME = home;

const started = Date.now();
const serveCmd = steps[0].command;
say(`serve: ${serveCmd} (CAPSID_LISTEN=127.0.0.1:0, in ${work})`);
const server = spawn('sh', ['-c', `exec ${serveCmd}`], {
  cwd: work, env: { ...env, CAPSID_LISTEN: '127.0.0.1:0' }, stdio: ['ignore', 'pipe', 'pipe'],
});
let serveOut = '';
let serveErr = '';
server.stdout.on('data', (d) => { serveOut += d; });
server.stderr.on('data', (d) => { serveErr += d; });
const stopServer = () => {
  writeFileSync(join(out, 'serve.out'), serveOut);
  writeFileSync(join(out, 'serve.err'), serveErr);
  if (server.exitCode === null) server.kill('SIGTERM');
};
process.on('exit', stopServer);

const port = await new Promise((done) => {
  const deadline = setTimeout(() => fail(`serve printed no banner in 60 s:\n${serveOut}\n${serveErr}`), 60_000);
  const look = () => {
    const m = serveErr.match(/capsid is serving MCP at http:\/\/127\.0\.0\.1:(\d+)\/ops\/mcp/);
    // The whole banner: a pipe may deliver it in more than one chunk.
    if (m && serveErr.includes('namespaces register my-project')) {
      clearTimeout(deadline);
      done(m[1]);
    }
  };
  server.stderr.on('data', look);
  server.on('exit', (code) => fail(`serve exited (${code}) before its banner:\n${serveOut}\n${serveErr}`));
});
// The banner (on stderr) the README promises: the URL, the database, the exact command to mint
// a first agent.
try {
  if (!serveErr.includes('No agents yet')) throw new Error('no "No agents yet"');
  if (!serveErr.includes('database: sqlite://./capsid-data/capsid.db')) throw new Error('no database line');
  if (!/^ {2}capsid agents mint --name me /m.test(serveErr)) throw new Error('no `capsid agents mint` command');
  const health = await (await fetch(`http://127.0.0.1:${port}/health`)).json();
  for (const key of ['status', 'schema_version', 'sha']) if (!(key in health)) throw new Error(`/health has no ${key}`);
  if (health.status !== 'ok') throw new Error(`/health says ${health.status}`);
} catch (e) {
  fail(`serve: ${e.message}\n${serveErr}`);
}
say(`serve: listening on 127.0.0.1:${port}`);

// One shell for the reader's second terminal; each step's output goes to its own files.
const q = (s) => `'${s.replaceAll("'", "'\\''")}'`;
const run = [...steps.slice(1), ...EXTRA];
let script = `cd ${q(work)} || exit 99\n`;
run.forEach((s, n) => {
  const f = q(join(stepsDir, s.id));
  const command = s.command.replaceAll(README_PORT, `127.0.0.1:${port}`);
  writeFileSync(join(stepsDir, `${s.id}.sh`), command + '\n');
  script += `{\n${command}\n} >${f}.out 2>${f}.err\nrc=$?\nprintf '%s\\n' "$rc" >${f}.rc\nprintf '%s' "\${CAPSID_KEY-}" >${f}.key\n[ "$rc" -eq 0 ] || exit ${n + 1}\n`;
});
writeFileSync(join(out, 'tour.sh'), script);
const shell = spawnSync('sh', [join(out, 'tour.sh')], { cwd: work, env, stdio: 'inherit', timeout: 600_000 });
if (shell.error) fail(`the tour's shell: ${shell.error.message}`);

let failures = 0;
for (const s of run) {
  const read = (ext) => {
    try {
      return readFileSync(join(stepsDir, `${s.id}.${ext}`), 'utf8');
    } catch {
      return null;
    }
  };
  const rc = read('rc');
  if (rc === null) {
    console.error(`  ✗ ${s.id}: not run (an earlier step failed)`);
    failures++;
    continue;
  }
  const r = { out: read('out'), err: read('err'), key: read('key'), rc: Number(rc) };
  try {
    if (r.rc !== 0) throw new Error(`exit status ${r.rc}`);
    (s.check ?? CHECKS[s.id])(r);
    console.log(`  ✓ ${s.id}`);
  } catch (e) {
    failures++;
    console.error(`  ✗ ${s.id}: ${e.message}\n    command: ${s.command.replaceAll('\n', '\n             ')}\n    stderr: ${(r.err ?? '').trim().slice(0, 600)}`);
  }
}

// What the tour did, seen from the server: nothing logged the made-up peer_info of a stateless
// request, and the server stops cleanly.
server.removeAllListeners('exit');
const exited = new Promise((done) => server.on('exit', (code, signal) => done({ code, signal })));
server.kill('SIGTERM');
const { code } = await exited;
if (code !== 0) {
  failures++;
  console.error(`  ✗ serve: exit status ${code} after SIGTERM`);
}
if (serveErr.includes('peer_info')) {
  failures++;
  console.error('  ✗ serve: the log shows a peer_info');
}
say(`${run.length + 1} steps in ${((Date.now() - started) / 1000).toFixed(1)} s; output in ${out}`);
if (failures > 0) fail(`${failures} step(s) of the README's tour failed`);
say('the README tour runs as written');
