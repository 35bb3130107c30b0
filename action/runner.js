'use strict';
// runner.js is the runner's side of a JavaScript action, as GitHub's
// runner speaks it ("Workflow commands for GitHub Actions"): inputs arrive
// as INPUT_* variables and the main step's saved state as STATE_*; what the
// action hands back is appended to the files that GITHUB_ENV, GITHUB_PATH,
// GITHUB_OUTPUT, GITHUB_STATE and GITHUB_STEP_SUMMARY name, and its
// messages are `::error::` and `::warning::` lines on stdout. Written with
// Node's own modules: the runner runs an action from its repository as it
// is, with no npm install.

const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');

// ActionError is a failure the step reports as one ::error:: line.
class ActionError extends Error {}

// input is the input name, trimmed, or def when the runner gave none (a
// test; the runner itself passes action.yml's defaults).
function input(name, def = '') {
  const v = process.env['INPUT_' + name.replace(/ /g, '_').toUpperCase()];
  return (v === undefined || v === '' ? def : v).trim();
}

// booleanInput reads true or false, as the YAML 1.2 core schema spells
// them (the toolkit's getBooleanInput takes the same).
function booleanInput(name, def) {
  const v = input(name, def ? 'true' : 'false');
  if (['true', 'True', 'TRUE'].includes(v)) return true;
  if (['false', 'False', 'FALSE'].includes(v)) return false;
  throw new ActionError(`input ${name}: ${JSON.stringify(v)} is neither true nor false`);
}

// state is what the main step saved as name (the runner hands it to the
// post step as STATE_name), or ''.
function state(name) {
  return process.env['STATE_' + name] || '';
}

// fileOf is the file the runner named in variable, which must be set.
function fileOf(variable) {
  const file = process.env[variable];
  if (!file) {
    throw new ActionError(`${variable} is not set: this script is meant to be run by a GitHub Actions runner, as the contain action`);
  }
  return file;
}

// setValue appends name=value to the file named in variable (GITHUB_ENV,
// GITHUB_OUTPUT, GITHUB_STATE); a value of several lines goes between
// delimiters, as the runner reads them.
function setValue(variable, name, value) {
  value = String(value);
  let text = `${name}=${value}${os.EOL}`;
  if (/[\r\n]/.test(value)) {
    const delimiter = `ghadelimiter_${crypto.randomUUID()}`;
    text = `${name}<<${delimiter}${os.EOL}${value}${os.EOL}${delimiter}${os.EOL}`;
  }
  fs.appendFileSync(fileOf(variable), text, 'utf8');
}

// addPath puts dir on PATH for the job's later steps.
function addPath(dir) {
  fs.appendFileSync(fileOf('GITHUB_PATH'), dir + os.EOL, 'utf8');
}

// appendSummary adds Markdown to the job's summary.
function appendSummary(markdown) {
  fs.appendFileSync(fileOf('GITHUB_STEP_SUMMARY'), markdown, 'utf8');
}

// escapeData escapes a workflow command's message, as the runner unescapes
// it: the message stays one line whatever it holds.
function escapeData(s) {
  return String(s).replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

function command(name, message) {
  process.stdout.write(`::${name}::${escapeData(message)}${os.EOL}`);
}

const error = (message) => command('error', message);
const warning = (message) => command('warning', message);
const notice = (message) => command('notice', message);
const info = (message) => process.stdout.write(`${message}${os.EOL}`);

// run runs step, the action's main or post step: an ActionError (or any
// other error) is one ::error:: line and exit status 1.
function run(step) {
  step().catch((err) => {
    if (err instanceof ActionError) {
      error(err.message);
    } else {
      info(String(err && err.stack ? err.stack : err));
      error(`contain action: ${err && err.message ? err.message : err}`);
    }
    process.exitCode = 1;
  });
}

module.exports = {
  ActionError,
  input,
  booleanInput,
  state,
  setValue,
  addPath,
  appendSummary,
  escapeData,
  error,
  warning,
  notice,
  info,
  run,
};
