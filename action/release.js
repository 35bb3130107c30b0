'use strict';
// release.js finds, downloads, checks and unpacks a contain release as
// goreleaser.yaml makes it: contain_VERSION_OS_ARCH.tar.gz (.zip for
// Windows), the binary at the archive's top, and checksums.txt, the
// SHA-256 of each archive, at vVERSION/ of the release's downloads.

const crypto = require('node:crypto');
const http = require('node:http');
const https = require('node:https');
const zlib = require('node:zlib');

const { ActionError } = require('./runner');

// The runner's names (RUNNER_OS, RUNNER_ARCH) of what is released, and
// goreleaser's.
const OSES = { Linux: 'linux', macOS: 'darwin', Windows: 'windows' };
const ARCHES = { X64: 'amd64', ARM64: 'arm64' };

// platform is the release's OS and architecture for this runner:
// RUNNER_OS and RUNNER_ARCH, or Node's own names where the runner's are
// not set.
function platform(env) {
  const runnerOS = env.RUNNER_OS || { linux: 'Linux', darwin: 'macOS', win32: 'Windows' }[process.platform] || process.platform;
  const runnerArch = env.RUNNER_ARCH || { x64: 'X64', arm64: 'ARM64' }[process.arch] || process.arch;
  const goos = OSES[runnerOS];
  const goarch = ARCHES[runnerArch];
  if (!goos || !goarch) {
    throw new ActionError(
      `contain is not released for this runner (RUNNER_OS=${runnerOS}, RUNNER_ARCH=${runnerArch}): ` +
        'there are releases for Linux, macOS and Windows, on X64 and ARM64'
    );
  }
  return { goos, goarch, exe: goos === 'windows' ? 'contain.exe' : 'contain', ext: goos === 'windows' ? 'zip' : 'tar.gz' };
}

const VERSION = /^v?([0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?)$/;

// resolveVersion is the version to install (1.2.3): want as given (1.2.3,
// v1.2.3), or, for '' or latest, the action's own ref where that is a
// full version tag (uses: contain-cli/contain@v1.2.3), else the newest
// release, the tag that releaseURL/latest redirects to.
async function resolveVersion(want, actionRef, releaseURL) {
  if (want !== '' && want !== 'latest') {
    const m = VERSION.exec(want);
    if (!m) throw new ActionError(`input version: ${JSON.stringify(want)} is not a version (1.2.3, v1.2.3 or latest)`);
    return m[1];
  }
  if (want === '') {
    const m = VERSION.exec(actionRef);
    if (m) return m[1];
  }
  const latest = `${releaseURL}/latest`;
  const res = await request(latest, { follow: false });
  const location = res.headers.location ? new URL(res.headers.location, latest).pathname : '';
  const m = /\/tag\/([^/]+)$/.exec(location);
  const v = m && VERSION.exec(decodeURIComponent(m[1]));
  if (res.status < 300 || res.status >= 400 || !v) {
    throw new ActionError(`cannot tell the newest release: ${latest} answered ${res.status}${location ? ` (to ${location})` : ''}, not a redirect to a release's tag; give the input version`);
  }
  return v[1];
}

// assetName is the release's archive for version on p.
function assetName(version, p) {
  return `contain_${version}_${p.goos}_${p.goarch}.${p.ext}`;
}

// request GETs url (http or https), following redirects unless told not
// to; a network failure or a 5xx answer is tried three times in all.
async function request(url, { follow = true } = {}) {
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await get(url, follow ? 10 : 0);
      if (res.status < 500 || attempt === 3) return res;
    } catch (err) {
      if (err instanceof ActionError || attempt === 3) {
        throw err instanceof ActionError ? err : new ActionError(`cannot download ${url}: ${err.message}`);
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 1000 * attempt));
  }
}

function get(url, redirects) {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const client = { 'https:': https, 'http:': http }[u.protocol];
    if (!client) {
      reject(new ActionError(`cannot download ${url}: only http and https are supported`));
      return;
    }
    const req = client.get(u, { headers: { 'User-Agent': 'contain-action' } }, (res) => {
      const location = res.headers.location;
      if (redirects > 0 && [301, 302, 303, 307, 308].includes(res.statusCode) && location) {
        res.resume();
        get(new URL(location, u).href, redirects - 1).then(resolve, reject);
        return;
      }
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks), url: u.href }));
      res.on('error', reject);
    });
    req.setTimeout(120000, () => req.destroy(new Error('no answer within 120 s')));
    req.on('error', reject);
  });
}

// download is the body of url, which must answer 200.
async function download(url) {
  const res = await request(url);
  if (res.status !== 200) throw new ActionError(`cannot download ${url}: HTTP ${res.status}`);
  return res.body;
}

// verify checks archive, named asset, against the release's checksums.txt.
function verify(asset, archive, checksums) {
  let want = '';
  for (const line of checksums.split(/\r?\n/)) {
    const m = /^([0-9a-fA-F]{64}) [ *](.+)$/.exec(line.trim());
    if (m && m[2] === asset) want = m[1].toLowerCase();
  }
  if (!want) throw new ActionError(`checksums.txt has no SHA-256 for ${asset}: not installing it`);
  const got = crypto.createHash('sha256').update(archive).digest('hex');
  if (got !== want) {
    throw new ActionError(`checksum mismatch for ${asset}: checksums.txt says ${want}, the download is ${got}: not installing it`);
  }
}

// extract is the file name at the top of archive, a tar.gz or a zip (ext).
function extract(archive, ext, name) {
  const data = ext === 'zip' ? fromZip(archive, name) : fromTar(zlib.gunzipSync(archive), name);
  if (!data) throw new ActionError(`the release's archive has no ${name} at its top`);
  return data;
}

// fromTar reads a tar (POSIX ustar, with pax or GNU long names, as Go's
// archive/tar writes it) for name.
function fromTar(tar, name) {
  let longName = '';
  for (let off = 0; off + 512 <= tar.length; ) {
    const h = tar.subarray(off, off + 512);
    if (h.every((b) => b === 0)) break;
    const size = tarNumber(h.subarray(124, 136));
    const type = String.fromCharCode(h[156] || 48);
    const data = tar.subarray(off + 512, off + 512 + size);
    off += 512 + Math.ceil(size / 512) * 512;
    if (type === 'x' || type === 'L') {
      longName = type === 'L' ? cString(data) : paxPath(data);
      continue;
    }
    const prefix = cString(h.subarray(345, 500));
    let path = longName || (prefix ? `${prefix}/${cString(h.subarray(0, 100))}` : cString(h.subarray(0, 100)));
    longName = '';
    path = path.replace(/^(\.\/)+/, '');
    if ((type === '0' || type === '7') && path === name) return Buffer.from(data);
  }
  return null;
}

function cString(b) {
  const end = b.indexOf(0);
  return b.subarray(0, end < 0 ? b.length : end).toString('utf8');
}

// tarNumber reads a size field: octal, or base-256 when its top bit is set.
function tarNumber(b) {
  if (b[0] & 0x80) {
    let n = b[0] & 0x7f;
    for (const c of b.subarray(1)) n = n * 256 + c;
    return n;
  }
  return parseInt(cString(b).trim() || '0', 8);
}

// paxPath is the path record of a pax header ("LEN path=VALUE\n"), or ''.
function paxPath(data) {
  const text = data.toString('utf8');
  for (let i = 0; i < text.length; ) {
    const sp = text.indexOf(' ', i);
    const len = parseInt(text.slice(i, sp), 10);
    if (sp < 0 || !(len > 0)) break;
    const record = text.slice(sp + 1, i + len - 1);
    if (record.startsWith('path=')) return record.slice(5);
    i += len;
  }
  return '';
}

// fromZip reads a zip's central directory for name, stored or deflated.
function fromZip(zip, name) {
  let eocd = -1;
  for (let i = zip.length - 22; i >= 0 && i >= zip.length - 22 - 65535; i--) {
    if (zip.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new ActionError("the release's zip has no central directory");
  const count = zip.readUInt16LE(eocd + 10);
  let off = zip.readUInt32LE(eocd + 16);
  for (let n = 0; n < count && off + 46 <= zip.length; n++) {
    if (zip.readUInt32LE(off) !== 0x02014b50) break;
    const method = zip.readUInt16LE(off + 10);
    const compressed = zip.readUInt32LE(off + 20);
    const size = zip.readUInt32LE(off + 24);
    const nameLen = zip.readUInt16LE(off + 28);
    const extraLen = zip.readUInt16LE(off + 30);
    const commentLen = zip.readUInt16LE(off + 32);
    const local = zip.readUInt32LE(off + 42);
    const entry = zip.subarray(off + 46, off + 46 + nameLen).toString('utf8');
    off += 46 + nameLen + extraLen + commentLen;
    if (entry !== name) continue;
    if (zip.readUInt32LE(local) !== 0x04034b50) break;
    const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
    const raw = zip.subarray(start, start + compressed);
    const data = method === 8 ? zlib.inflateRawSync(raw) : method === 0 ? Buffer.from(raw) : null;
    if (!data || data.length !== size) throw new ActionError(`the release's zip holds ${name} in a form this action cannot read (method ${method})`);
    return data;
  }
  return null;
}

module.exports = { platform, resolveVersion, assetName, download, verify, extract };
