// The MindRoom dashboard: plain JavaScript over the REST API (/api), no build step.
// Everything shown comes from the API already redacted, and is put in the page as text, never as HTML.
"use strict";

const REFRESH_MS = 2000;
const EFFECTIVE_EVERY = 5;  // the config in force and the usage are read again every fifth refresh (within 10 s)
let generation = null;
let timer = null;
let effective = null;
let refreshes = 0;
let threadsRead = false;
let threadsAsked = 0;  // only the latest listing asked for is shown
let connectionsAsked = 0;
let confirming = false;  // a Disconnect waiting for its confirmation: the listing is not redrawn under it
const roomNames = new Map();  // room id -> name, from the bots' rooms

const $ = (id) => document.getElementById(id);

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

function row(cells) {
  const tr = document.createElement("tr");
  for (const cell of cells) {
    const td = cell instanceof Node ? cell : el("td", cell);
    tr.appendChild(td.tagName === "TD" ? td : wrap(td));
  }
  return tr;
}

function wrap(node) {
  const td = document.createElement("td");
  td.appendChild(node);
  return td;
}

function numeric(value) {
  return el("td", value, "num");
}

function fill(tableId, rows) {
  const body = $(tableId).querySelector("tbody");
  body.replaceChildren(...rows);
}

function notice(text, bad) {
  const box = $("notice");
  box.textContent = text;
  box.className = bad ? "notice bad" : "notice";
  box.hidden = !text;
}

async function api(method, path, body, headers) {
  const options = { method, credentials: "same-origin", headers: { ...(headers || {}) } };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  if (response.status === 401) {
    showSignIn();
    throw new Error("signed out");
  }
  return response;
}

function showSignIn() {
  $("signin").hidden = false;
  $("main").hidden = true;
  $("state").textContent = "signed out";
  $("state").className = "pill warn";
}

function duration(seconds) {
  if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  if (seconds < 90) return `${seconds.toFixed(1)} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

function clock(unix) {
  return new Date(unix * 1000).toLocaleTimeString();
}

function when(unix) {
  return unix === null || unix === undefined ? "unknown" : new Date(unix * 1000).toLocaleString();
}

function renderBots(bots) {
  fill("bots", bots.map((bot) => {
    const synced = el("span", bot.synced ? "synced" : "not synced", bot.synced ? "pill ok" : "pill bad");
    const rooms = bot.rooms.map((room) => room.name || room.room_id).join(", ") || "—";
    return row([`${bot.display_name} (${bot.name})`, bot.user_id || "—", synced, rooms, numeric(bot.answers), numeric(bot.in_flight)]);
  }));
}

function renderHooks(hooks) {
  fill("hooks", hooks.map((hook) => {
    const breakerClass = hook.breaker_state === "closed" ? "pill ok" : hook.breaker_state === "open" ? "pill bad" : "pill warn";
    const tr = row([
      hook.event_name,
      `${hook.plugin_name} : ${hook.hook_name}`,
      numeric(hook.calls),
      numeric(hook.failures),
      numeric(hook.background ? hook.dropped : "—"),
      numeric(hook.p95_ms === null ? "—" : hook.p95_ms.toFixed(1)),
      el("span", hook.breaker_state, breakerClass),
      hook.last_error || "",
    ]);
    tr.dataset.hook = `${hook.plugin_name}:${hook.hook_name}:${hook.event_name}`;
    return tr;
  }));
}

function renderApprovals(approvals) {
  $("approvals-empty").hidden = approvals.length > 0;
  $("approvals").hidden = approvals.length === 0;
  fill("approvals", approvals.map((approval) => {
    const buttons = document.createElement("td");
    const allow = el("button", "Approve", "allow");
    const deny = el("button", "Deny", "deny");
    allow.type = deny.type = "button";
    allow.addEventListener("click", () => decide(approval.approval_id, "approve"));
    deny.addEventListener("click", () => decide(approval.approval_id, "deny"));
    buttons.append(allow, " ", deny);
    const tr = row([approval.agent, approval.tool_name, approval.prompt, clock(approval.expires_at), buttons]);
    tr.dataset.approval = approval.approval_id;
    return tr;
  }));
}

function renderTurns(turns) {
  fill("turns", turns.map((turn) => row([
    clock(turn.started_at),
    turn.agent,
    turn.source_kind === "api" ? "API" : `Matrix (${turn.source_kind})`,
    numeric(duration(turn.latency_s)),
    el("span", turn.outcome, turn.outcome === "answered" ? "pill ok" : "pill warn"),
    turn.hooks.length ? [...new Set(turn.hooks)].join(", ") : "—",
  ])));
}

function renderToolProblems(agents) {
  const lines = agents.flatMap((agent) => agent.unavailable_tools.map(
    (tool) => `${agent.name} runs without ${tool.tool}: ${tool.reason} — fix: ${tool.fix}`));
  $("tool-problems").replaceChildren(...lines.map((text) => el("p", text, "warn")));
}

function renderPlugins(plugins) {
  $("plugins").replaceChildren(...plugins.plugins.map((plugin) => el("li", `${plugin.name} — ${plugin.hooks} hook(s), ${plugin.path}`)));
  const errors = [...plugins.errors.map((e) => `${e.plugin} did not load: ${e.error}`)];
  if (plugins.last_reload_failure) {
    const failure = plugins.last_reload_failure;
    errors.push(`Last reload failed (${clock(failure.at)}): ${failure.error || failure.failed.join(", ")}`);
  }
  $("plugin-errors").replaceChildren(...errors.map((text) => el("p", text, "bad")));
  if (!plugins.plugins.length && !errors.length) $("plugins").replaceChildren(el("li", "No plugins loaded.", "muted"));
}

async function refresh() {
  try {
    const response = await api("GET", "/api/overview");
    if (response.status === 503) {
      $("state").textContent = "starting";
      $("state").className = "pill warn";
      return;
    }
    const data = await response.json();
    $("signin").hidden = true;
    $("main").hidden = false;
    $("state").textContent = data.ready ? "ready" : "syncing";
    $("state").className = data.ready ? "pill ok" : "pill warn";
    $("uptime").textContent = `up ${duration(data.uptime_s)}`;
    renderBots(data.bots);
    noteRooms(data.bots);
    if (!threadsRead) {
      threadsRead = true;
      loadThreads();  // read once, then on demand: each listing reads every thread it shows from the homeserver
    }
    renderApprovals(data.approvals);
    renderHooks(data.hooks);
    renderTurns(data.turns);
    renderPlugins(data.plugins);
    renderToolProblems(data.agents);
    if (generation === null) await loadConfig();
    if (refreshes++ % EFFECTIVE_EVERY === 0) await Promise.all([loadEffective(), loadUsage(), loadConnections()]);
  } catch (error) {
    if (error.message !== "signed out") {
      $("state").textContent = "unreachable";
      $("state").className = "pill bad";
    }
  }
}

function renderUsage(days, people) {
  // Bars are the day's cost when anything was priced this month, else its tokens: both are sums the API gave.
  const priced = days.rows.some((day) => day.cost_usd > 0);
  const size = (day) => (priced ? day.cost_usd : day.input_tokens + day.output_tokens);
  const top = Math.max(0, ...days.rows.map(size));
  $("usage-chart").replaceChildren(...days.rows.map((day) => {
    const bar = el("div", null, priced ? "bar priced" : "bar");
    bar.style.height = `${top > 0 ? Math.max(1, Math.round((size(day) / top) * 100)) : 1}%`;
    bar.title = `${day.day}: ${day.turns} turns, ${day.input_tokens + day.output_tokens} tokens, $${day.cost_usd.toFixed(4)}`;
    bar.dataset.day = day.day;
    return bar;
  }));
  const total = days.total;
  $("usage-total").textContent = `${total.turns} turns, ${total.input_tokens + total.output_tokens} tokens, `
    + `$${total.cost_usd.toFixed(4)}${total.unpriced_turns ? ` (${total.unpriced_turns} turns on unpriced models)` : ""}`;
  fill("usage", people.rows.map((entry) => row([
    entry.requester, entry.agent, numeric(entry.turns), numeric(entry.input_tokens), numeric(entry.cached_tokens),
    numeric(entry.output_tokens), numeric(entry.tool_calls), numeric(entry.cost_usd.toFixed(4)),
    numeric(entry.unpriced_turns),
  ])));
}

async function loadUsage() {
  const [days, people] = await Promise.all([
    api("GET", "/api/usage?period=month&group_by=day"),
    api("GET", "/api/usage?period=month&group_by=requester,agent"),
  ]);
  if (!days.ok || !people.ok) {
    $("usage-section").hidden = days.status === 503 || people.status === 503;  // a daemon that keeps no usage
    return;
  }
  renderUsage(await days.json(), await people.json());
}

async function decide(id, verb) {
  const response = await api("POST", `/api/approvals/${encodeURIComponent(id)}/${verb}`, verb === "deny" ? {} : undefined);
  const body = await response.json();
  notice(response.ok ? `${body.tool_name}: ${body.status} by ${body.decided_by}` : body.detail, !response.ok);
  await refresh();
}

function noteRooms(bots) {
  const known = roomNames.size;
  for (const bot of bots) for (const room of bot.rooms) roomNames.set(room.room_id, room.name || room.room_id);
  if (roomNames.size === known) return;
  const select = $("threads-room");
  const chosen = select.value;
  const every = el("option", "every room");
  every.value = "";
  const rooms = [...roomNames].sort((a, b) => a[1].localeCompare(b[1])).map(([id, name]) => {
    const option = el("option", name);
    option.value = id;
    return option;
  });
  select.replaceChildren(every, ...rooms);
  select.value = chosen;
}

async function loadThreads() {
  const query = new URLSearchParams();
  const tag = $("threads-tag").value.trim().toLowerCase();
  if ($("threads-room").value) query.set("room", $("threads-room").value);
  if (tag) query.set("tag", tag);
  if ($("threads-resolved").value) query.set("resolved", $("threads-resolved").value);
  const line = $("threads-status");
  line.textContent = "Reading the threads…";
  line.className = "muted";
  const asked = ++threadsAsked;
  try {
    const response = await api("GET", `/api/threads?${query}`);
    const body = await response.json();
    if (asked !== threadsAsked) return;
    if (!response.ok) {
      line.textContent = `Not shown: ${typeof body.detail === "string" ? body.detail : response.statusText}`;
      line.className = "bad";
      return;
    }
    renderThreads(body.threads);
  } catch (error) {
    if (error.message !== "signed out") {
      line.textContent = "Not shown: the daemon did not answer.";
      line.className = "bad";
    }
  }
}

function tagPills(tags) {
  const cell = document.createElement("td");
  for (const name of Object.keys(tags).filter((tag) => tag !== "resolved").sort()) {
    const record = tags[name];
    const pill = el("span", record.note ? `${name}: ${record.note}` : name, "pill tag");
    pill.title = `set by ${record.set_by || "unknown"}${record.set_at ? `, ${record.set_at}` : ""}`;
    pill.dataset.tag = name;
    cell.appendChild(pill);
  }
  if (!cell.childNodes.length) cell.textContent = "—";
  return cell;
}

function threadRow(thread) {
  const exportButton = el("button", "Export");
  exportButton.type = "button";
  exportButton.addEventListener("click", () => exportThread(thread.room_id, thread.thread_id));
  const summary = el("td", thread.summary === null ? "no summary yet" : thread.summary, thread.summary === null ? "summary muted" : "summary");
  const tr = row([
    el("code", thread.thread_id),
    summary,
    tagPills(thread.tags),
    el("span", thread.resolved ? "resolved" : "open", thread.resolved ? "pill" : "pill ok"),
    when(thread.last_activity),
    exportButton,
  ]);
  tr.dataset.thread = thread.thread_id;
  tr.dataset.resolved = String(thread.resolved);
  return tr;
}

function renderThreads(threads) {
  const byRoom = new Map();
  for (const thread of threads) {
    if (!byRoom.has(thread.room_id)) byRoom.set(thread.room_id, []);
    byRoom.get(thread.room_id).push(thread);
  }
  const parts = [];
  for (const [roomId, list] of byRoom) {
    list.sort((a, b) => (b.last_activity || 0) - (a.last_activity || 0));
    const heading = el("h3", roomNames.get(roomId) || roomId);
    const table = document.createElement("table");
    const head = document.createElement("thead");
    const titles = document.createElement("tr");
    titles.append(...["Thread", "Summary", "Tags", "State", "Last activity", ""].map((title) => el("th", title)));
    head.appendChild(titles);
    const body = document.createElement("tbody");
    body.append(...list.map(threadRow));
    table.append(head, body);
    table.dataset.room = heading.dataset.room = roomId;
    parts.push(heading, table);
  }
  $("threads").replaceChildren(...parts);
  const line = $("threads-status");
  line.textContent = threads.length ? `${threads.length} thread(s) in ${byRoom.size} room(s)` : "No thread matches.";
  line.className = "muted";
}

async function exportThread(roomId, threadId) {
  const response = await api("POST", "/api/threads/export", { room: roomId, thread: threadId });
  const body = await response.json();
  if (!response.ok) {
    notice(`Export of ${threadId} failed: ${typeof body.detail === "string" ? body.detail : response.statusText}`, true);
    return;
  }
  notice(body.files.map((file) => `Exported ${file.thread_id}: ${file.markdown} ${file.json}`).join("\n"));
}

function connectionsLine(text, className) {
  const line = $("connections-status");
  line.textContent = text;
  line.className = className;
}

async function loadConnections(force) {
  if (confirming && !force) return;
  const asked = ++connectionsAsked;
  try {
    const response = await api("GET", "/api/oauth/providers");
    const body = await response.json();
    if (asked !== connectionsAsked || (confirming && !force)) return;
    if (response.status === 503 && body.detail === "OAuth connections are not available in this daemon") {
      $("connections-section").hidden = true;
      return;
    }
    if (!response.ok) {
      connectionsLine(`Not shown: ${typeof body.detail === "string" ? body.detail : response.statusText}`, "bad");
      return;
    }
    confirming = false;
    renderConnections(body.providers);
  } catch (error) {
    if (error.message !== "signed out") connectionsLine("Not shown: the daemon did not answer.", "bad");
  }
}

function connectionState(connection) {
  const classes = { connected: "pill ok", expired: "pill warn", unreadable: "pill bad" };
  const pill = el("span", connection.state, classes[connection.state] || "pill");
  if (connection.state === "unreadable") pill.title = "sealed with another recovery key: the person connects again";
  if (connection.state === "expired") pill.title = "ended, and there is no refresh token: the person connects again";
  return pill;
}

function disconnectCell(provider, connection) {
  const cell = document.createElement("td");
  const ask = el("button", "Disconnect", "deny");
  ask.type = "button";
  ask.addEventListener("click", () => {
    confirming = true;
    const question = el("span", `Revoke and forget ${connection.person}'s ${provider.display_name} connection? `);
    const yes = el("button", "Yes, disconnect", "deny confirm");
    const no = el("button", "Cancel");
    yes.type = no.type = "button";
    yes.addEventListener("click", () => disconnect(provider, connection.person));
    no.addEventListener("click", () => {
      confirming = false;
      cell.replaceChildren(ask);
    });
    cell.replaceChildren(question, yes, " ", no);
  });
  cell.appendChild(ask);
  return cell;
}

function connectionRow(provider, connection) {
  const tr = row([
    el("code", connection.person),
    connection.scopes === null ? "unknown" : connection.scopes.join(" ") || "—",
    connectionState(connection),
    when(connection.connected_at),
    connection.expires_at === null ? "no end" : when(connection.expires_at) + (connection.refreshable ? " (refreshed when used)" : ""),
    disconnectCell(provider, connection),
  ]);
  tr.dataset.person = connection.person;
  return tr;
}

function providerPart(provider) {
  const heading = el("h3", provider.display_name === provider.provider ? provider.provider : `${provider.display_name} (${provider.provider})`);
  heading.appendChild(el("span", provider.ready ? "ready" : "not ready", provider.ready ? "pill ok" : "pill bad"));
  heading.dataset.provider = provider.provider;
  const about = provider.ready
    ? `Scopes asked for: ${provider.scopes.join(" ") || "none"}. ${provider.revocable ? "A disconnect revokes the tokens at the provider." : "The provider has no revocation_url: a disconnect only forgets the tokens here."}`
    : provider.problem;
  const parts = [heading, el("p", about, provider.ready ? "muted" : "bad")];
  if (!provider.connections.length) {
    parts.push(el("p", "Nobody is connected.", "muted"));
    return parts;
  }
  const table = document.createElement("table");
  const head = document.createElement("thead");
  const titles = document.createElement("tr");
  titles.append(...["Person", "Scopes", "State", "Connected", "Expires", ""].map((title) => el("th", title)));
  head.appendChild(titles);
  const body = document.createElement("tbody");
  body.append(...provider.connections.map((connection) => connectionRow(provider, connection)));
  table.append(head, body);
  table.dataset.provider = provider.provider;
  parts.push(table);
  return parts;
}

function renderConnections(providers) {
  $("connections").replaceChildren(...providers.flatMap(providerPart));
  const people = providers.reduce((sum, provider) => sum + provider.connections.length, 0);
  connectionsLine(providers.length ? `${people} connection(s) to ${providers.length} provider(s)` : "No OAuth provider is set up (oauth_providers in config.yaml).", "muted");
}

async function disconnect(provider, person) {
  const response = await api("POST", `/api/oauth/${encodeURIComponent(provider.provider)}/disconnect`, { person });
  const body = await response.json();
  if (!response.ok) {
    notice(`Disconnecting ${person} from ${provider.display_name} failed: ${typeof body.detail === "string" ? body.detail : response.statusText}`, true);
  } else if (body.problem) {
    notice(`Disconnected ${person} from ${provider.display_name} here, but the provider did not revoke it: ${body.problem}`, true);
  } else {
    notice(`Disconnected ${person} from ${provider.display_name}${body.revoked ? " and revoked the tokens at the provider" : ""}.`);
  }
  await loadConnections(true);
}

function showLines(errorLines) {
  const count = $("config").value.split("\n").length;
  const gutter = $("gutter");
  gutter.replaceChildren();
  for (let line = 1; line <= count; line++) {
    const span = el("span", `${line}\n`, errorLines.has(line) ? "error-line" : "");
    gutter.appendChild(span);
  }
  gutter.scrollTop = $("config").scrollTop;
}

function showErrors(errors) {
  const lines = new Set(errors.map((e) => e.line).filter((line) => line));
  $("config-errors").replaceChildren(...errors.map((e) => el("li", e.line ? `line ${e.line}: ${e.message}` : e.message)));
  showLines(lines);
}

async function loadConfig() {
  const response = await api("GET", "/api/config/raw?redacted=true");
  const body = await response.json();
  generation = response.headers.get("x-mindroom-config-generation");
  $("config").value = body.source;
  showErrors([]);
}

function origin(value) {
  if (value.source === "chat") return el("span", `chat: ${value.set_by}, ${when(value.set_at)}`, "pill warn");
  return el("span", value.source, value.source === "config.yaml" ? "pill ok" : "pill");
}

function override(item) {
  const where = item.scope === "config" ? "config" : item.thread_id ? `thread ${item.thread_id}` : `room ${item.room_id}`;
  const line = `${item.path} = ${JSON.stringify(item.value)} (${where}; set by ${item.set_by}, ${when(item.set_at)})`;
  return el("li", item.why ? `${line}: ${item.why}` : line, item.why ? "bad" : "");
}

function renderEffective() {
  if (!effective) return;
  const filter = $("effective-filter").value.trim();
  const defaults = $("effective-defaults").checked;
  const shown = effective.values.filter((value) => (defaults || value.source !== "default") && value.path.includes(filter));
  fill("effective", shown.map((value) => {
    const tr = row([el("code", value.path), JSON.stringify(value.value), origin(value)]);
    tr.dataset.path = value.path;
    tr.dataset.source = value.source;
    return tr;
  }));
  const hidden = effective.values.filter((value) => value.source === "default").length;
  $("effective-state").textContent = `${shown.length} of ${effective.values.length} values shown` + (defaults ? "" : ` (${hidden} defaults hidden)`);
  $("effective-state").className = "muted";
  const parts = [];
  if (effective.notices.length) parts.push(el("h3", "Accepted, not used here"), noticeList(effective.notices));
  if (effective.scoped.length) parts.push(el("h3", "Room and thread settings from chat"), listOf(effective.scoped));
  if (effective.not_in_effect.length) parts.push(el("h3", "Kept from chat, passed over"), listOf(effective.not_in_effect));
  $("effective-chat").replaceChildren(...parts);
}

// A config key accepted and not used here (the page's notice line above is `notice`).
function keyNotice(item) {
  return el("li", `${item.path}${item.line ? ` (line ${item.line})` : ""}: ${item.message}`, "warn");
}

function noticeList(items) {
  const list = document.createElement("ul");
  list.replaceChildren(...items.map(keyNotice));
  return list;
}

function listOf(items) {
  const list = document.createElement("ul");
  list.replaceChildren(...items.map(override));
  return list;
}

async function loadEffective() {
  const response = await api("GET", "/api/config/effective");
  const body = await response.json();
  if (!response.ok) {
    const problems = response.status === 409 ? body.detail.errors.map((e) => e.message).join("; ") : body.detail;
    $("effective-state").textContent = `Not shown: config.yaml does not load as it is now (${problems}).`;
    $("effective-state").className = "bad";
    return;
  }
  effective = body;
  renderEffective();
}

async function validate() {
  const response = await api("POST", "/api/config/validate", { source: $("config").value });
  const body = await response.json();
  showErrors(body.errors);
  const notices = body.notices || [];
  $("config-errors").append(...notices.map(keyNotice));
  const accepted = notices.length ? ` ${notices.length} key(s) accepted and not used here (listed below).` : "";
  $("config-state").textContent = body.valid ? `The config is valid.${accepted}` : `${body.errors.length} problem(s).`;
  $("config-state").className = body.valid ? (notices.length ? "warn" : "ok") : "bad";
}

async function save() {
  const response = await api("PUT", "/api/config/raw", { source: $("config").value }, { "x-mindroom-config-generation": generation || "" });
  const body = await response.json();
  if (response.status === 422) {
    showErrors(body.detail.errors || []);
    $("config-state").textContent = "Not saved: the config has problems.";
    $("config-state").className = "bad";
    return;
  }
  if (response.status === 409) {
    $("config-state").textContent = "Not saved: config.yaml changed since it was loaded. Reload the page to see it.";
    $("config-state").className = "bad";
    return;
  }
  if (!response.ok) {
    notice(typeof body.detail === "string" ? body.detail : "Saving failed.", true);
    return;
  }
  generation = body.generation;
  showErrors([]);
  refreshes = 0;  // the config in force is read again with the next refresh
  const reload = body.reload;
  $("config-state").textContent = reload ? reload.summary : "Saved.";
  $("config-state").className = reload && !reload.ok ? "bad" : "ok";
  await refresh();
}

async function reloadNow() {
  const response = await api("POST", "/api/reload");
  const body = await response.json();
  notice(response.ok ? body.summary : body.detail, !response.ok || !body.ok);
  generation = null;
  refreshes = 0;
  await refresh();
}

async function signIn(key) {
  const response = await fetch("/api/auth/session", {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ api_key: key }),
  });
  if (!response.ok) {
    notice("That key was not accepted.", true);
    return;
  }
  notice("");
  await refresh();
}

function start() {
  $("reload").addEventListener("click", reloadNow);
  $("validate").addEventListener("click", validate);
  $("save").addEventListener("click", save);
  $("config").addEventListener("input", () => showLines(new Set()));
  $("effective-filter").addEventListener("input", renderEffective);
  $("effective-defaults").addEventListener("change", renderEffective);
  $("threads-filter").addEventListener("submit", (event) => {
    event.preventDefault();
    loadThreads();
  });
  $("threads-room").addEventListener("change", loadThreads);
  $("threads-resolved").addEventListener("change", loadThreads);
  $("connections-refresh").addEventListener("click", () => loadConnections(true));
  $("config").addEventListener("scroll", () => { $("gutter").scrollTop = $("config").scrollTop; });
  $("signin-form").addEventListener("submit", (event) => {
    event.preventDefault();
    signIn($("signin-key").value);
  });
  const fragment = new URLSearchParams(window.location.hash.slice(1));
  if (fragment.get("key")) {
    const key = fragment.get("key");
    history.replaceState(null, "", window.location.pathname);  // the key leaves the address bar at once
    signIn(key);
  } else {
    refresh();
  }
  timer = setInterval(() => { if (document.visibilityState === "visible") refresh(); }, REFRESH_MS);
}

document.addEventListener("DOMContentLoaded", start);
