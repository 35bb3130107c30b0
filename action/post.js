'use strict';
// post.js is the action's post step, run after the job's other steps
// (and their actions' post steps, which the runner runs in reverse
// order), whether they passed, failed or were cancelled. It ends what
// the job's steps left under the job's tool name: contain stop asks each
// live session's contain run to close its group (a `contain run ... &`
// a step left in the background), contain reap ends the orphaned ones (a
// run killed with its guard; with include-daemons, what `contain run -d`
// started). Then it writes what was ended, and the ports those processes
// held, to the job's summary. A failure here is a warning, unless
// fail-on-reap-error.

const { spawnSync } = require('node:child_process');

const runner = require('./runner');
const summary = require('./summary');

// How long contain stop waits for a live session's run to close its
// group (its grace period included) before it kills what is left.
const STOP_TIMEOUT = '30s';

// contain runs bin with args and reads its JSON report: { report, problem }.
// Exit status 1 with a report is contain's "not everything": the report
// says what.
function contain(bin, args) {
  runner.info(`${bin} ${args.join(' ')}`);
  const res = spawnSync(bin, args, { encoding: 'utf8', timeout: 180000, maxBuffer: 64 << 20, stdio: ['ignore', 'pipe', 'pipe'] });
  const stderr = (res.stderr || '').trim();
  if (stderr) runner.info(stderr);
  if (res.error) return { report: null, problem: `contain ${args[0]}: ${res.error.message}` };
  let report = null;
  try {
    report = JSON.parse(res.stdout);
  } catch {
    // said below, with the exit status
  }
  if (!report || ![0, 1].includes(res.status)) {
    return { report, problem: `contain ${args[0]} exited with status ${res.status ?? res.signal}${stderr ? `: ${stderr}` : ''}` };
  }
  return { report, problem: '', status: res.status, stderr };
}

// portsBefore maps each tagged process of tool (PID and start) to the
// ports it holds, where this contain's ps reports them.
function portsBefore(bin, tool) {
  const ports = new Map();
  const { report } = contain(bin, ['ps', `--originator=${tool}`, '--format', 'json']);
  for (const s of (report && report.sessions) || []) {
    for (const p of s.processes || []) {
      if (Array.isArray(p.ports) && p.ports.length) ports.set(`${p.pid} ${p.started}`, p.ports);
    }
  }
  return ports;
}

async function post() {
  const bin = runner.state('binary');
  const tool = runner.state('originator');
  if (!bin || !tool) {
    runner.info('contain was not installed by this action in this job: nothing to reap');
    return;
  }
  if (runner.state('reap') === 'false') {
    runner.info(`reap: false: leaving what is left of ${tool} as it is`);
    return;
  }
  const includeDaemons = runner.state('include_daemons') !== 'false';
  const strict = runner.state('fail_on_reap_error') === 'true';

  const ports = portsBefore(bin, tool);
  const problems = [];
  const rows = [];
  const add = (report, how) => {
    for (const p of (report && report.processes) || []) {
      if (p.skipped) continue;
      const known = Array.isArray(p.ports) && p.ports.length ? p.ports : ports.get(`${p.pid} ${p.started}`);
      rows.push({ ...p, how, ports: known });
    }
  };

  // Live sessions first: their runs close their groups as on SIGTERM, and
  // what they spared (their daemons) is then an orphaned session's.
  const stop = contain(bin, ['stop', `--originator=${tool}`, '--timeout', STOP_TIMEOUT, '--kill', '--format', 'json']);
  add(stop.report, 'stopped');
  if (stop.problem) problems.push(stop.problem);
  for (const s of (stop.report && stop.report.sessions) || []) {
    if (s.failed) problems.push(`contain stop: session ${s.originator && s.originator.value}: ${s.result}`);
  }

  const reapArgs = ['reap', `--originator=${tool}`, '--format', 'json'];
  if (includeDaemons) reapArgs.push('--include-daemons');
  const reap = contain(bin, reapArgs);
  add(reap.report, 'reaped');
  if (reap.problem) problems.push(reap.problem);
  const failedCgroups = ((reap.report && reap.report.cgroups) || []).filter((c) => c.failed);
  for (const c of failedCgroups) problems.push(`contain reap: cgroup ${c.dir}: ${c.result}`);
  const failedProcesses = ((reap.report && reap.report.processes) || []).filter(summary.failed);
  if (reap.status === 1 && !failedProcesses.length && !failedCgroups.length) {
    // What reap could not tell, said on stderr only.
    problems.push(`contain reap: ${reap.stderr || 'exit status 1'}`);
  }
  const leftAlone = ((reap.report && reap.report.skipped_sessions) || []).map((s) => ({
    originator: s.originator,
    state: s.state,
    reason: s.reason,
  }));

  const { markdown, log } = summary.render(tool, rows, leftAlone, problems);
  runner.info(log);
  if (process.env.GITHUB_STEP_SUMMARY) {
    runner.appendSummary(markdown);
  } else {
    runner.info('GITHUB_STEP_SUMMARY is not set: the summary is in this log only');
  }

  const stillRunning = rows.filter(summary.failed).length;
  if (stillRunning || problems.length) {
    const what = [];
    if (stillRunning) what.push(`${stillRunning} of the processes the job left could not be ended`);
    what.push(...problems);
    const message = `contain: ${what.join('; ')}`;
    if (strict) {
      runner.error(`${message} (fail-on-reap-error)`);
      process.exitCode = 1;
    } else {
      runner.warning(message);
    }
  }
}

runner.run(post);
