'use strict';
// main.js is the action's main step: it installs the released contain for
// this runner, puts it on PATH, exports the job's tool name as
// CONTAIN_ORIGINATOR, and saves for the post step (post.js) what that
// needs.

const { execFileSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const runner = require('./runner');
const release = require('./release');

const { ActionError } = runner;

// A tool name contain writes (SPEC: the environment contract).
const TOOL = /^[A-Za-z0-9_.-]{1,64}$/;

// originatorName is the input, or the job's own name: GHA, the run's id,
// its attempt, the job's id and six random hex digits, made of the
// characters a tool name may have and cut to its 64. The random part:
// two jobs of one matrix have the same run, attempt and job id, and where
// they run side by side on one machine (self-hosted runners), the post
// step of the one that ends first would stop the other's live runs.
function originatorName(given, env) {
  if (given !== '') {
    if (!TOOL.test(given)) {
      throw new ActionError(`input originator: ${JSON.stringify(given)} is not a tool name (1 to 64 of A-Z a-z 0-9 _ . -; no ':')`);
    }
    return given;
  }
  const parts = ['GHA', env.GITHUB_RUN_ID, env.GITHUB_RUN_ATTEMPT, env.GITHUB_JOB].filter((p) => p);
  const job = parts.join('-').replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 64 - 7);
  return `${job}-${crypto.randomBytes(3).toString('hex')}`;
}

async function main() {
  const releaseURL = runner.input('release-url', 'https://github.com/contain-cli/contain/releases').replace(/\/+$/, '');
  const p = release.platform(process.env);
  const originator = originatorName(runner.input('originator'), process.env);
  const reap = runner.booleanInput('reap', true);
  const includeDaemons = runner.booleanInput('include-daemons', true);
  const failOnReapError = runner.booleanInput('fail-on-reap-error', false);
  const version = await release.resolveVersion(runner.input('version'), process.env.GITHUB_ACTION_REF || '', releaseURL);

  const asset = release.assetName(version, p);
  const base = `${releaseURL}/download/v${version}`;
  runner.info(`contain ${version} for ${p.goos}/${p.goarch}: ${base}/${asset}`);
  const [archive, checksums] = await Promise.all([release.download(`${base}/${asset}`), release.download(`${base}/checksums.txt`)]);
  release.verify(asset, archive, checksums.toString('utf8'));
  const binary = release.extract(archive, p.ext, p.exe);

  // RUNNER_TEMP: the job's own, emptied when the job ends, after the
  // post step.
  const dir = path.join(process.env.RUNNER_TEMP || os.tmpdir(), 'contain-action', `${version}_${p.goos}_${p.goarch}`);
  fs.mkdirSync(dir, { recursive: true });
  const exe = path.join(dir, p.exe);
  const part = `${exe}.${process.pid}.part`;
  fs.writeFileSync(part, binary, { mode: 0o755 });
  fs.renameSync(part, exe);
  let said;
  try {
    said = execFileSync(exe, ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60000 }).trim();
  } catch (err) {
    throw new ActionError(`the installed ${exe} does not run: ${String(err.stderr || err.message).trim()}`);
  }

  runner.addPath(dir);
  runner.setValue('GITHUB_ENV', 'CONTAIN_ORIGINATOR', originator);
  runner.setValue('GITHUB_OUTPUT', 'version', version);
  runner.setValue('GITHUB_OUTPUT', 'path', exe);
  runner.setValue('GITHUB_OUTPUT', 'originator', originator);
  runner.setValue('GITHUB_STATE', 'binary', exe);
  runner.setValue('GITHUB_STATE', 'originator', originator);
  runner.setValue('GITHUB_STATE', 'reap', String(reap));
  runner.setValue('GITHUB_STATE', 'include_daemons', String(includeDaemons));
  runner.setValue('GITHUB_STATE', 'fail_on_reap_error', String(failOnReapError));
  runner.info(`${said}: ${exe} (SHA-256 checked), on PATH for the job's later steps`);
  runner.info(`CONTAIN_ORIGINATOR=${originator}: contain run and contain timeout tag what they start with it` +
    (reap ? '; after the job, what is left of it is ended' : ''));
}

runner.run(main);
