// An Olares market source on Cloudflare Workers, written by `olares-pack export cloudflare`.
// Every body comes precomputed from catalogue.json (the same bytes `olares-pack serve` answers);
// charts and icons are static assets under public/. This file is the same for every catalogue.
// The v2 routes of Olares 1.12.7 (olares_pack/market_v2.py) join the same parts `serve` joins.
import catalogue from "./catalogue.json";

const MAX_BODY = 64 * 1024;
const MAX_IDS = 100;
const OS_VERSION = /^v?([0-9]{1,9})(?:\.([0-9]{1,9}))?(?:\.([0-9]{1,9}))?(?:-([0-9A-Za-z-]{1,64}(?:\.[0-9A-Za-z-]{1,64}){0,15}))?(?:\+[0-9A-Za-z.-]{1,64})?$/;
// app names of either OS line (olares_pack/common/naming.py ANY_LINE_NAME_RE): 1.12.3-1.12.5 take over 30 characters
const NAME = /^[a-z0-9]{1,63}$/;
const ID = /^[0-9a-f]{8}$/;
const encoder = new TextEncoder();
const tags = new Map();

function json(status, text, extra = {}) {
  return new Response(text, { status, headers: { "Content-Type": "application/json", ...extra } });
}

function error(status, message) {
  return json(status, JSON.stringify({ error: message, status }));
}

// Olares versions read loosely, as the installer does ('01.12.6' is 1.12.6); null when unreadable.
function parseVersion(text) {
  if (typeof text !== "string" || text.length > 256) return null;
  const m = OS_VERSION.exec(text.trim());
  if (!m) return null;
  const nums = [m[1], m[2], m[3]].map((g) => Number(g || 0));
  const pre = m[4] ? m[4].split(".").map((p) => (/^[0-9]+$/.test(p) ? String(Number(p)) : p)) : [];
  return { nums, pre, text: nums.join(".") + (pre.length ? "-" + pre.join(".") : "") };
}

function compareIds(a, b) {
  const an = /^[0-9]+$/.test(a), bn = /^[0-9]+$/.test(b);
  if (an && bn) return Math.sign(Number(a) - Number(b));
  if (an !== bn) return an ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

function compare(v, r) {
  for (let i = 0; i < 3; i++) if (v.nums[i] !== r[0][i]) return Math.sign(v.nums[i] - r[0][i]);
  const a = v.pre, b = r[1];
  if (!a.length || !b.length) return a.length === b.length ? 0 : a.length ? -1 : 1;
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const c = compareIds(a[i], b[i]);
    if (c) return c;
  }
  return Math.sign(a.length - b.length);
}

const OPS = { ">=": (c) => c >= 0, ">": (c) => c > 0, "<=": (c) => c <= 0, "<": (c) => c < 0, "=": (c) => c === 0, "!=": (c) => c !== 0 };

// The view an OS version sees: which dependency windows admit it, as a key into the views.
function viewOf(v) {
  const mask = catalogue.dependencies
    .map((alts) => (alts.some((terms) => terms.every(([op, ref]) => OPS[op](compare(v, ref)))) ? "1" : "0"))
    .join("");
  const index = catalogue.masks[mask];
  return index === undefined ? null : catalogue.views[index];
}

async function etag(text) {
  let tag = tags.get(text);
  if (!tag) {
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
    tag = '"' + [...digest.slice(0, 16)].map((b) => b.toString(16).padStart(2, "0")).join("") + '"';
    if (tags.size > 256) tags.clear();
    tags.set(text, tag);
  }
  return tag;
}

async function cached(request, text) {
  const tag = await etag(text);
  const headers = { "Cache-Control": "no-cache", ETag: tag };
  if (request.headers.get("If-None-Match") === tag) return new Response(null, { status: 304, headers });
  return json(200, text, headers);
}

function requestVersion(value) {
  const v = parseVersion(value === null ? catalogue.default_version : value);
  return v;
}

async function details(request) {
  const declared = request.headers.get("Content-Length");
  if (declared !== null && Number(declared) > MAX_BODY) return error(413, `request body over ${MAX_BODY} bytes`);
  const raw = await request.arrayBuffer();
  if (raw.byteLength > MAX_BODY) return error(413, `request body over ${MAX_BODY} bytes`);
  let doc;
  try {
    doc = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(raw));
  } catch {
    return error(400, "the body is not JSON");
  }
  if (doc === null || typeof doc !== "object" || Array.isArray(doc) || !Array.isArray(doc.app_ids)) {
    return error(400, 'expected {"app_ids": ["<id>", ...], "version": "<Olares version>"}');
  }
  const ids = doc.app_ids;
  if (ids.length > MAX_IDS) return error(400, `${ids.length} ids: at most ${MAX_IDS} per request`);
  if (!ids.every((i) => typeof i === "string")) return error(400, "app_ids holds strings");
  const v = parseVersion("version" in doc ? doc.version : catalogue.default_version);
  if (!v) return error(400, "version is an Olares version string (e.g. 1.12.6)");
  const view = viewOf(v);
  const wanted = [...new Set(ids)];
  const fragments = view ? view.fragments : {};
  const found = wanted.filter((i) => ID.test(i) && Object.hasOwn(fragments, i)).sort();
  const missing = wanted.filter((i) => !found.includes(i));
  const apps = found.map((i) => JSON.stringify(i) + ":" + fragments[i]).join(",");
  return json(200, '{"apps":{' + apps + '},"not_found":' + JSON.stringify(missing) + ',"version":' + JSON.stringify(v.text) + "}");
}

// The last value of a query parameter, as the server's parser keeps it; null when absent.
function param(url, name) {
  const all = url.searchParams.getAll(name);
  return all.length ? all[all.length - 1] : null;
}

function wholeNumber(url, name, fallback, low) {
  const text = param(url, name);
  if (text === null || text === "") return fallback;
  if (!/^[0-9]{1,9}$/.test(text) || Number(text) < low) return null;
  return Number(text);
}

async function v2(request, url, path) {
  const v = parseVersion(param(url, "version") ?? catalogue.v2_default_version);
  if (!v) return error(400, "version is an Olares version string (e.g. 1.12.6)");
  const view = viewOf(v);
  if (!view) return error(404, `no catalogue for Olares ${v.text}`);
  const parts = view.v2;
  if (path === "/api/v2/catalog" || path === "/api/v2/taxonomy") {
    const sid = param(url, "source_id") || catalogue.source_id;
    if (encoder.encode(sid).length > 256) return error(400, "source_id is at most 256 bytes of UTF-8");
    const [prefix, suffix] = path === "/api/v2/catalog" ? parts.catalog : parts.taxonomy;
    return cached(request, prefix + JSON.stringify(sid) + suffix);
  }
  const size = wholeNumber(url, "size", 0, 0);
  if (size === null) return error(400, "size is a whole number of at least 0");
  let page = 1;
  if (size) {
    page = wholeNumber(url, "page", 1, 1);
    if (page === null) return error(400, "page is a whole number of at least 1");
  }
  const total = parts.items.length;
  let chosen = parts.items, hasMore = false, pageSize = total;
  if (size) {
    const start = (page - 1) * size;
    chosen = start < total ? parts.items.slice(start, start + size) : [];
    hasMore = start + size < total;
    pageSize = size;
  }
  return cached(request, '{"code":0,"data":{"has_more":' + hasMore + ',"items":[' + chosen.join(",") +
    '],"max_last_modify_time":' + parts.max_time + ',"page":' + page + ',"page_size":' + pageSize +
    ',"removed":[],"total":' + total + '},"msg":"success"}');
}

async function chart(request, env, url, name) {
  const fileName = url.searchParams.get("fileName") || "";
  // the device sends the app version as `version`: the file name alone decides
  const sha = NAME.test(name) && Object.hasOwn(catalogue.files, name) && Object.hasOwn(catalogue.files[name], fileName)
    ? catalogue.files[name][fileName] : null;
  if (!sha) return error(404, `no chart ${JSON.stringify(fileName.slice(0, 200))} for ${name}`);
  const headers = {
    "Content-Type": "application/gzip",
    "Cache-Control": "public, max-age=31536000, immutable",
    "Content-Disposition": `attachment; filename="${fileName}"`,
    ETag: `"sha256:${sha}"`,
  };
  if (request.headers.get("If-None-Match") === headers.ETag) return new Response(null, { status: 304, headers });
  const asset = await env.ASSETS.fetch(new URL(`/charts/${name}/${fileName}`, url));
  if (!asset.ok) return error(503, `${fileName} is missing from the assets`);
  return new Response(request.method === "HEAD" ? null : asset.body, { status: 200, headers });
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const path = url.pathname;
    const get = request.method === "GET" || request.method === "HEAD";
    if (path === "/api/v1/appstore/hash" || path === "/api/v1/appstore/info") {
      if (!get) return error(405, `${path} takes GET`);
      const v = requestVersion(url.searchParams.get("version"));
      if (!v) return error(400, "not an Olares version (expected e.g. 1.12.6)");
      const view = viewOf(v);
      if (!view) return error(404, `no catalogue for Olares ${v.text}`);
      const prefix = path.endsWith("hash") ? view.hash_prefix : view.info_prefix;
      return cached(request, prefix + JSON.stringify(v.text) + "}");
    }
    if (path === "/api/v1/applications/info") {
      if (request.method !== "POST") return error(405, `${path} takes POST`);
      return details(request);
    }
    if (path === "/api/v2/catalog" || path === "/api/v2/taxonomy" || path === "/api/v2/applications" ||
        path === "/api/v2/browse/applications") {
      if (!get) return error(405, `${path} takes GET`);
      return v2(request, url, path);
    }
    // the chart under either prefix: Olares 1.12.7 asks /api/v2 first (beclab/Olares PR #3958)
    const m = /^\/api\/v[12]\/applications\/([^/]+)\/chart$/.exec(path);
    if (m) {
      if (!get) return error(405, "method not allowed");
      let name;
      try {
        name = decodeURIComponent(m[1]);
      } catch {
        return error(404, "no such app");
      }
      return chart(request, env, url, name);
    }
    if (path === "/health") {
      return json(200, JSON.stringify({ status: "ok", apps: catalogue.apps, charts: catalogue.charts, index_sha256: catalogue.index_sha256 }));
    }
    return error(404, "not found");
  },
};
