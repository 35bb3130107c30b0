'use strict';
// summary.js writes what the post step did as Markdown for the job's
// summary ($GITHUB_STEP_SUMMARY) and as lines for its log. Every name,
// argv and tag comes from another process, so each is escaped: in the
// Markdown every character but a few plain ones becomes an HTML entity
// (nothing a process chose can close a cell, start a link or write HTML),
// in the log each control character is written as \xNN.

// ended is whether contain ended p: it was to be ended (not skipped) and
// no longer runs.
const ended = (p) => !p.skipped && !p.alive;

// failed is whether contain tried to end p and could not.
const failed = (p) => !p.skipped && (p.alive || p.failed);

// commandLine is p's argv, an argument a shell would not read as it is
// quoted, or
// its command name in brackets where the argv is empty (as ps shows a
// process whose argv cannot be read).
function commandLine(p) {
  const argv = Array.isArray(p.argv) ? p.argv.map(String) : [];
  if (argv.length === 0) return `[${p.comm || '?'}]`;
  const line = argv.map((a) => (/^[A-Za-z0-9_.,:/=@+%-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
}

// portText renders one entry of a process's ports, in whichever form
// contain gives it: a number, a string, or an object with a port and
// perhaps an address and a protocol.
function portText(port) {
  if (port === null || typeof port !== 'object') return String(port);
  const number = port.port ?? port.number;
  if (number === undefined) return JSON.stringify(port);
  const address = port.address ?? port.addr ?? port.ip ?? '';
  const proto = port.proto ?? port.protocol ?? port.network ?? '';
  // As contain says it: ":3000" on every address, "127.0.0.1:3000",
  // "[::1]:3000", and "/udp" after a UDP one.
  const a = String(address);
  const where = a === '' || a === '0.0.0.0' || a === '::' ? `:${number}` : a.includes(':') ? `[${a}]:${number}` : `${a}:${number}`;
  return String(proto).toLowerCase().startsWith('udp') ? `${where}/udp` : where;
}

function portsText(ports) {
  return Array.isArray(ports) ? ports.map(portText).join(', ') : '';
}

// html escapes s for a Markdown table cell.
function html(s) {
  return Array.from(String(s), (c) => (/[A-Za-z0-9 .,:/=@+-]/.test(c) ? c : `&#${c.codePointAt(0)};`)).join('');
}

// printable writes s's control characters as \xNN, for the log.
function printable(s) {
  // eslint-disable-next-line no-control-regex
  return String(s).replace(/[\x00-\x1f\x7f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;

// render is the summary of rows (the processes stop and reap report,
// each with how: stopped or reaped, and ports where known), leftAlone
// (the sessions reap left, and why) and problems (what went wrong beyond
// a process that could not be ended), for tool: { markdown, log }.
function render(tool, rows, leftAlone, problems) {
  const sessions = new Set(rows.map((r) => r.originator && r.originator.value).filter((v) => v));
  const endedCount = rows.filter(ended).length;
  const failedCount = rows.filter(failed).length;
  const withPorts = rows.some((r) => portsText(r.ports) !== '');
  const md = ['### contain: what the job left running', ''];
  const log = [];
  if (rows.length === 0) {
    md.push(`Nothing was left: no process of <code>${html(tool)}</code> ran when the job ended.`);
    log.push(`contain: nothing was left: no process of ${printable(tool)} ran when the job ended`);
  } else {
    let head = `${plural(sessions.size, 'session', 'sessions')} of <code>${html(tool)}</code>, ${plural(endedCount, 'process', 'processes')} ended`;
    if (failedCount) head += `, **${plural(failedCount, 'process', 'processes')} still running**`;
    md.push(`${head}.`, '');
    log.push(`contain: ${plural(sessions.size, 'session', 'sessions')} of ${printable(tool)}, ${plural(endedCount, 'process', 'processes')} ended` +
      (failedCount ? `, ${plural(failedCount, 'process', 'processes')} still running` : ''));
    md.push(`| session | PID | command |${withPorts ? ' ports |' : ''} what became of it |`);
    md.push(`| --- | ---: | --- |${withPorts ? ' --- |' : ''} --- |`);
    for (const r of rows) {
      const value = (r.originator && r.originator.value) || '-';
      const result = `${r.how}: ${r.result || (ended(r) ? 'ended' : 'still running')}`;
      const ports = portsText(r.ports);
      md.push(`| <code>${html(value)}</code> | ${html(r.pid)} | <code>${html(commandLine(r))}</code> |${withPorts ? ` ${html(ports)} |` : ''} ${html(result)} |`);
      log.push(`  ${printable(value)}  PID ${r.pid}  ${printable(commandLine(r))}${ports ? `  ports ${printable(ports)}` : ''}  ${printable(result)}`);
    }
  }
  if (leftAlone.length) md.push('');
  for (const s of leftAlone) {
    md.push(`Left running: <code>${html(s.originator)}</code> (${html(s.state)}): ${html(s.reason)}.  `);
    log.push(`contain: left running: ${printable(s.originator)} (${printable(s.state)}): ${printable(s.reason)}`);
  }
  if (problems.length) md.push('');
  for (const p of problems) {
    md.push(`**Could not finish:** ${html(p)}  `);
    log.push(`contain: ${printable(p)}`);
  }
  return { markdown: md.join('\n') + '\n', log: log.join('\n') };
}

module.exports = { render, ended, failed, commandLine, portsText };
