// agentmem console: plain ES module, no dependencies. It calls the public API (/v1) with the key the
// person typed, kept in sessionStorage only. Text from the API is always set as text, never as HTML.

const KEY = "agentmem.key";
const KIND = "agentmem.kind"; // "account" or "user": what the key acts for
const userKey = () => sessionStorage.getItem(KIND) === "user";
const API_BASE = new URL(".", location.href); // the console is served beside /v1
const main = document.getElementById("main");

// ---------- DOM ----------
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "value") el.value = v;
    else if (k === "checked") el.checked = !!v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}
let uid = 0;
const nextId = (p) => `${p}-${++uid}`;
function field(label, control, hint) {
  control.id = control.id || nextId("f");
  const err = h("p", { class: "error", id: control.id + "-error", role: "alert", hidden: true });
  control.setAttribute("aria-describedby", err.id);
  return h("div", { class: "field", "data-for": control.name || "" },
    h("label", { for: control.id }, label), hint ? h("p", { class: "muted" }, hint) : null, control, err);
}
function showFieldError(control, message) {
  const err = document.getElementById(control.id + "-error");
  control.classList.toggle("field-error", !!message);
  control.setAttribute("aria-invalid", message ? "true" : "false");
  if (err) { err.textContent = message || ""; err.hidden = !message; }
}
const errorBox = () => h("p", { class: "error", role: "alert", hidden: true });
// the API's refusal next to the control of the field it names (else in the form's box), the text kept
function showApiError(e, controls, box) {
  const target = controls[(e.details && e.details.field) || ""];
  if (target) { showFieldError(target, e.message); target.focus(); } else say(box, e.message);
}
// a form that creates one thing by name (If-None-Match: *): the API's messages next to their fields
function createForm(label, fields, submitText, create) {
  const box = errorBox();
  const form = h("form", { novalidate: true, "aria-label": label, onsubmit: async (ev) => {
    ev.preventDefault();
    for (const c of Object.values(fields)) showFieldError(c.control, "");
    say(box, "");
    const controls = Object.fromEntries(Object.values(fields).map((c) => [c.field, c.control]));
    try { await create(); } catch (e) {
      // a name already taken (412 to If-None-Match: *) is the name's problem
      showApiError(e.status === 412 ? Object.assign(e, { details: { ...e.details, field: fields.name.field } }) : e, controls, box);
    }
  } }, Object.values(fields).map((c) => c.row || field(c.label, c.control, c.hint)),
    h("div", { class: "row" }, h("button", { type: "submit" }, submitText)), box);
  return form;
}
function say(box, message, ok) {
  box.className = ok ? "ok" : "error";
  box.textContent = message || "";
  box.hidden = !message;
}
function render(title, ...children) {
  document.title = `${title} · agentmem console`;
  main.replaceChildren(h("h1", {}, title), ...children.filter((c) => c !== null && c !== undefined && c !== false));
}
const fmtTime = (t) => (t ? t.replace("T", " ").replace(/\.\d+Z$/, " UTC") : "—");
// asks first, in `slot`: what goes, said; the API's refusal shows in the panel (or as `refused` renders it)
function confirmPanel(slot, trigger, { title, lines = [], confirmText, run, refused }) {
  const box = h("div", { class: "error", role: "alert", hidden: true });
  const titleId = nextId("confirm");
  const go = h("button", { type: "button", class: "danger", onclick: async () => {
    go.disabled = true; box.replaceChildren(); box.hidden = true;
    try { await run(); } catch (e) {
      box.replaceChildren(...(refused ? await refused(e) : [e.message])); box.hidden = false;
    }
    go.disabled = false;
  } }, confirmText);
  const panel = h("div", { class: "panel conflict", role: "alertdialog", "aria-labelledby": titleId },
    h("p", { id: titleId }, h("strong", {}, title)), lines.length ? h("ul", {}, lines.map((l) => h("li", {}, l))) : null,
    h("div", { class: "row" }, go, h("button", { type: "button", onclick: () => { slot.replaceChildren(); trigger.focus(); } }, "Keep it")),
    box);
  slot.replaceChildren(panel);
  go.focus();
}
const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;

// ---------- API ----------
class ApiError extends Error {
  constructor(status, error) {
    super(error.message || `HTTP ${status}`);
    this.status = status; this.code = error.code; this.details = error;
  }
}
async function api(method, path, { body, query, headers = {}, key } = {}) {
  const url = new URL(path.replace(/^\//, ""), API_BASE);
  for (const [k, v] of Object.entries(query || {})) if (v !== undefined && v !== null && v !== "") url.searchParams.set(k, v);
  const init = { method, headers: { Authorization: `Bearer ${key || sessionStorage.getItem(KEY)}`, ...headers },
    credentials: "omit", cache: "no-store" };
  if (body !== undefined) { init.body = JSON.stringify(body); init.headers["Content-Type"] = "application/json"; }
  if (method !== "GET") init.headers["X-Agentmem-Client"] = "console"; // recorded as updated_by: console
  const res = await fetch(url, init);
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!res.ok) {
    if (res.status === 401 && !key) { signOut("Your key is no longer accepted: " + ((data && data.error && data.error.message) || "")); }
    throw new ApiError(res.status, (data && data.error) || { message: `HTTP ${res.status}` });
  }
  return { data, etag: res.headers.get("ETag"), status: res.status };
}
const seg = (s) => encodeURIComponent(s);
// an upload link of this server (/v1/links/…, the embedded backend's) goes to the page's own origin, whatever
// host name it was made with (localhost or 127.0.0.1: the policy lets the page reach its own origin only);
// any other link (S3's, on AWS) as it is
function uploadTarget(url) {
  const target = new URL(url, API_BASE), own = new URL("v1/links/", API_BASE);
  return target.pathname.startsWith(own.pathname) ? own.origin + target.pathname + target.search : target.href;
}

// ---------- routing ----------
function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, qs] = raw.split("?");
  return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(qs || "") };
}
function link(parts, query) {
  const q = new URLSearchParams(Object.entries(query || {}).filter(([, v]) => v)).toString();
  return "#/" + parts.map(seg).join("/") + (q ? "?" + q : "");
}
const pages = {};
async function route() {
  if (!sessionStorage.getItem(KEY)) return signInPage();
  document.getElementById("nav").hidden = false;
  document.getElementById("sign-out").hidden = false;
  document.querySelector('#nav a[href="#/erase"]').hidden = userKey();
  const { parts, query } = parseHash();
  const page = pages[parts[0]] || pages.memories;
  for (const a of document.querySelectorAll("#nav a")) {
    if (a.getAttribute("href") === "#/" + (parts[0] || "memories")) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  try { await page(parts.slice(1), query); }
  catch (e) { render("Something went wrong", h("p", { class: "error", role: "alert" }, e.message)); }
}
window.addEventListener("hashchange", () => { route().then(() => main.focus({ preventScroll: true })); });

// ---------- sign in ----------
function signOut(message) {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(KIND);
  location.hash = "";
  signInPage(message);
}
function signInPage(message) {
  document.getElementById("nav").hidden = true;
  document.getElementById("sign-out").hidden = true;
  const input = h("input", { type: "password", name: "key", autocomplete: "off", required: true, spellcheck: "false" });
  const box = errorBox();
  const form = h("form", { novalidate: true, "aria-label": "Sign in", onsubmit: async (ev) => {
    ev.preventDefault();
    const key = input.value.trim();
    if (!key) return showFieldError(input, "Type an API key.");
    try {
      await api("GET", "v1/memories", { key });
    } catch (e) {
      showFieldError(input, e.status === 401 ? `Refused: ${e.message}` : e.message);
      input.focus();
      return;
    }
    // a user key may not list keys: it acts for its one user, and the pages say so
    let kind = "account";
    try { await api("GET", "v1/keys", { key }); } catch (e) { if (e.status === 403) kind = "user"; }
    sessionStorage.setItem(KEY, key);
    sessionStorage.setItem(KIND, kind);
    if (!location.hash || location.hash === "#") location.hash = "#/memories"; else route();
  } },
    field("API key", input, "An account key or a user key. It stays in this tab only (session storage) and is sent to the API as a Bearer token."),
    h("button", { type: "submit", class: "primary" }, "Sign in"), box);
  render("Sign in", form);
  if (message) say(box, message);
  input.focus();
}
document.getElementById("sign-out").addEventListener("click", () => signOut());

// ---------- memories ----------
pages.memories = async (parts, query) => {
  if (parts.length === 0) return memoriesList();
  if (parts[1] === "entry" && parts[2]) return entryPage(parts[0], parts[2], query.get("user") || "", query.get("new") === "1");
  return memoryPage(parts[0], query.get("user") || "");
};

async function memoriesList() {
  const { data } = await api("GET", "v1/memories");
  const rows = data.items.map((m) => h("tr", {},
    h("td", {}, h("a", { href: link(["memories", m.name], { user: m.user_id }) }, m.name)),
    h("td", {}, m.scope === "user" ? `user ${m.user_id}` : "account"),
    h("td", {}, String(m.entry_count)),
    h("td", {}, m.attached_to.length ? m.attached_to.join(", ") : h("span", { class: "muted" }, "none"))));
  render("Memories",
    h("p", { class: "muted" }, "Every memory this key sees, with its entries (in the layers it sees) and the agents that attach it."),
    h("div", { class: "scroll" }, h("table", {},
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Memory"), h("th", { scope: "col" }, "Scope"),
        h("th", { scope: "col" }, "Entries"), h("th", { scope: "col" }, "Attached to"))),
      h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 4 }, "No memories yet."))))),
    h("h2", {}, "New memory"), newMemoryForm());
}

function newMemoryForm() {
  const name = h("input", { type: "text", name: "memory", autocomplete: "off", spellcheck: "false" });
  const user = h("input", { type: "text", name: "user", autocomplete: "off" });
  const fields = { name: { field: "memory", label: "Name (lowercase letters, digits and . _ -)", control: name } };
  if (!userKey()) fields.user = { field: "user", label: "User id (empty: an account memory, shared by its users)", control: user };
  return createForm("New memory", fields, "Create memory", async () => {
    const path = `v1/memories/${seg(name.value.trim())}`;
    const res = await api("PUT", path, { query: { user: user.value.trim() } });
    // the API answers an existing memory with itself (200): creating it again is not what was meant
    if (res.status === 200) return showFieldError(name, `memory '${res.data.name}' already exists`);
    location.hash = link(["memories", res.data.name], { user: res.data.user_id });
  });
}

async function memoryPage(memory, user) {
  const [info, list] = await Promise.all([
    api("GET", `v1/memories/${seg(memory)}`, { query: { user } }),
    api("GET", `v1/memories/${seg(memory)}/entries`, { query: { user, limit: 100 } }),
  ]);
  const m = info.data;
  const userInput = h("input", { type: "text", name: "user", value: user, autocomplete: "off" });
  const layerForm = h("form", { novalidate: true, class: "row", "aria-label": "Layer", onsubmit: (ev) => {
    ev.preventDefault(); location.hash = link(["memories", memory], { user: userInput.value.trim() });
  } }, h("div", { class: "grow" }, field("User id (empty: the account layer)", userInput)),
    h("button", { type: "submit" }, "Show layer"));

  const q = h("input", { type: "search", name: "q", autocomplete: "off" });
  const mode = h("select", { name: "mode" }, ["hybrid", "keyword", "semantic", "deep"].map((v) => h("option", { value: v }, v)));
  const results = h("div", { "aria-live": "polite" });
  const searchForm = h("form", { novalidate: true, class: "row", role: "search", "aria-label": "Search entries", onsubmit: async (ev) => {
    ev.preventDefault();
    showFieldError(q, "");
    results.replaceChildren(h("p", { class: "muted" }, "Searching…"));
    try {
      const { data } = await api("GET", `v1/memories/${seg(memory)}/search`, { query: { q: q.value, mode: mode.value, user } });
      results.replaceChildren(
        h("p", { class: "search-mode" }, `Answered by: ${data.mode}`, data.fallback ? ` (fallback: ${data.fallback})` : "",
          data.stages && data.stages.length ? ` · stages: ${data.stages.join(" → ")}` : "",
          ` · ${data.items.length} hit${data.items.length === 1 ? "" : "s"}`),
        ...data.items.map((e) => h("div", { class: "hit" },
          h("a", { href: link(["memories", memory, "entry", e.name], { user: e.user_id || "" }) }, e.name),
          " ", h("span", { class: "badge" }, `score ${e.score.toFixed(3)}`), " ",
          h("span", { class: "badge" }, e.user_id ? `user ${e.user_id}` : "account"),
          h("div", { class: "muted" }, e.description || ""))));
    } catch (e) { results.replaceChildren(); showFieldError(q, e.message); }
  } }, h("div", { class: "grow" }, field("Search (the API's recall)", q)), h("div", {}, field("Mode", mode)),
    h("button", { type: "submit" }, "Search"));

  const entryRow = (e) => h("tr", {},
    h("td", {}, h("a", { href: link(["memories", memory, "entry", e.name], { user }) }, e.name)),
    h("td", {}, e.description || ""), h("td", {}, String(e.version)), h("td", {}, e.updated_by),
    h("td", {}, fmtTime(e.updated_at)));
  const rows = list.data.items.map(entryRow);
  let cursor = list.data.next_cursor;
  const moreEntries = h("button", { type: "button", hidden: !cursor, onclick: async () => {
    const { data } = await api("GET", `v1/memories/${seg(memory)}/entries`, { query: { user, limit: 100, cursor } });
    main.querySelector("#entries-body").append(...data.items.map(entryRow));
    cursor = data.next_cursor;
    moreEntries.hidden = !cursor;
  } }, "Load more entries");
  const newName = h("input", { type: "text", name: "name", autocomplete: "off", pattern: "[a-z0-9._\\-]{1,64}" });
  const newForm = h("form", { novalidate: true, class: "row", "aria-label": "New entry", onsubmit: (ev) => {
    ev.preventDefault();
    if (!/^[a-z0-9._-]{1,64}$/.test(newName.value)) return showFieldError(newName, "1–64 characters of a-z 0-9 . _ -");
    location.hash = link(["memories", memory, "entry", newName.value], { user, new: "1" });
  } }, h("div", { class: "grow" }, field("New entry name", newName)), h("button", { type: "submit" }, "Create…"));

  const deleteSlot = h("div", {});
  const deleteBtn = h("button", { type: "button", class: "danger", onclick: () => confirmPanel(deleteSlot, deleteBtn, {
    title: `Move memory ${memory} to the trash, with its entries (every layer's)?`,
    lines: ["Restore brings it back as it was within 30 days (Trash); after that it is purged."],
    confirmText: `Move ${memory} to the trash`,
    run: async () => {
      await api("DELETE", `v1/memories/${seg(memory)}`, { query: { user: m.user_id } });
      location.hash = "#/trash";
    },
    refused: attachedRefusal,
  }) }, "Delete memory…");

  render(`Memory ${memory}`,
    h("p", {}, h("a", { href: "#/memories" }, "← All memories")),
    h("dl", { class: "meta" }, h("dt", {}, "Scope"), h("dd", {}, m.scope === "user" ? `user ${m.user_id}` : "account"),
      h("dt", {}, "Entries"), h("dd", {}, String(m.entry_count)),
      h("dt", {}, "Attached to"), h("dd", {}, m.attached_to.join(", ") || "none"),
      h("dt", {}, "Layer shown"), h("dd", { id: "layer-shown" },
        userKey() ? "your user's layer (this is a user key)" : user ? `user ${user}` : m.scope === "user" ? `user ${m.user_id}` : "account layer")),
    h("div", { class: "row" }, deleteBtn), deleteSlot,
    m.scope === "account" && !userKey() ? layerForm : null,
    h("h2", {}, "Search"), searchForm, results,
    h("h2", {}, "Entries"),
    h("div", { class: "scroll" }, h("table", {},
      h("thead", {}, h("tr", {}, ["Name", "Description", "Version", "Updated by", "Updated"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", { id: "entries-body" }, rows.length ? rows : h("tr", {}, h("td", { colspan: 5 }, "No entries in this layer."))))),
    moreEntries, newForm);
}

// the agents that attach a memory (a 409's attached_to), each with where to detach it: its page, or the trash
// (an agent in the trash still attaches its memories until it is restored and changed, or deleted for good)
const attachedRefusal = async (e) => (e.code === "attached" && e.details.attached_to ? [e.message, await attachers(e.details.attached_to)] : [e.message]);
async function attachers(names) {
  let live = [], trashed = [];
  try {
    [live, trashed] = (await Promise.all([api("GET", "v1/agents"), api("GET", "v1/agents", { query: { trash: "true" } })]))
      .map((r) => r.data.items);
  } catch { /* the names alone, then */ }
  return h("ul", { class: "attachers" }, names.map((name) => {
    const a = live.find((x) => x.name === name), t = trashed.find((x) => x.name === name);
    if (a) return h("li", {}, h("a", { href: link(["agents", name], { user: a.user_id }) }, name), ` (${scopeOf(a)}): detach it on the agent's page`);
    if (t) return h("li", {}, name, ` (${scopeOf(t)}) is in the `, h("a", { href: "#/trash" }, "trash"), ": it still attaches it until it is deleted for good");
    return h("li", {}, name);
  }));
}

// ---------- an entry: read, edit (If-Match), conflict, delete, history ----------
async function entryPage(memory, name, user, isNew) {
  const path = `v1/memories/${seg(memory)}/entries/${seg(name)}`;
  let entry = null;
  if (!isNew) entry = (await api("GET", path, { query: { user } })).data;
  const back = h("p", {}, h("a", { href: link(["memories", memory], { user }) }, `← Memory ${memory}`));
  const view = h("section", { "aria-label": "Entry" });
  const historyBox = h("section", { "aria-label": "History" });

  function showEntry() {
    view.replaceChildren(
      h("dl", { class: "meta" },
        h("dt", {}, "Description"), h("dd", {}, entry.description || ""),
        h("dt", {}, "Version"), h("dd", { id: "entry-version" }, String(entry.version)),
        h("dt", {}, "Updated by"), h("dd", { id: "entry-updated-by" }, entry.updated_by),
        h("dt", {}, "Updated"), h("dd", {}, fmtTime(entry.updated_at)),
        h("dt", {}, "Layer"), h("dd", {}, entry.user_id ? `user ${entry.user_id}` : "account"),
        h("dt", {}, "Category · importance · visibility"), h("dd", {}, `${entry.category} · ${entry.importance} · ${entry.visibility}`)),
      h("pre", { class: "content", id: "entry-content", tabindex: "0", "aria-label": "Content" }, entry.content),
      h("div", { class: "row" },
        h("button", { type: "button", class: "primary", onclick: () => editor(entry.content) }, "Edit"),
        h("button", { type: "button", onclick: () => loadHistory() }, "History"),
        h("button", { type: "button", class: "danger", onclick: confirmDelete }, "Delete…")));
  }

  function editor(text, conflictWith) {
    const content = h("textarea", { name: "content", required: true }, );
    content.value = text;
    const desc = h("input", { type: "text", name: "description", value: entry ? entry.description : "" });
    const cat = h("input", { type: "text", name: "category", value: entry ? entry.category : "note" });
    const imp = h("input", { type: "number", name: "importance", min: "0", max: "1", step: "0.05", value: entry ? entry.importance : 0.5 });
    const box = errorBox();
    const controls = { content, description: desc, category: cat, importance: imp };
    const saveBtn = h("button", { type: "submit", class: "primary" }, conflictWith ? `Save over version ${conflictWith.version}` : "Save");
    const form = h("form", { novalidate: true, "aria-label": "Edit entry", onsubmit: async (ev) => {
      ev.preventDefault();
      for (const c of Object.values(controls)) showFieldError(c, "");
      say(box, "");
      const body = { content: content.value, description: desc.value || undefined, category: cat.value || undefined,
        importance: imp.value === "" ? undefined : Number(imp.value) };
      const expected = conflictWith ? conflictWith.version : entry ? entry.version : 0;
      const headers = expected ? { "If-Match": `"${expected}"` } : { "If-None-Match": "*" };
      saveBtn.disabled = true;
      try {
        await api("PUT", path, { body, headers, query: { user } });
        entry = (await api("GET", path, { query: { user } })).data;
        isNew = false;
        showEntry();
        say(view.appendChild(h("p", { role: "status" })), `Saved: version ${entry.version}.`, true);
      } catch (e) {
        saveBtn.disabled = false;
        if (e.status === 412 || e.status === 409 && e.code === "conflict") return conflict(content.value, e);
        const target = controls[e.details.field];
        if (target) { showFieldError(target, e.message); target.focus(); } else say(box, e.message);
      }
    } },
      field("Content (Markdown)", content), field("Description (one line)", desc),
      h("div", { class: "row" }, h("div", { class: "grow" }, field("Category", cat)), h("div", { class: "grow" }, field("Importance (0–1)", imp))),
      h("div", { class: "row" }, saveBtn,
        h("button", { type: "button", onclick: () => (entry ? showEntry() : (location.hash = link(["memories", memory], { user }))) }, "Cancel")),
      box);
    view.replaceChildren(form);
    content.focus();
    return content;
  }

  async function conflict(mine, error) {
    let theirs = null;
    try { theirs = (await api("GET", path, { query: { user } })).data; } catch { theirs = null; }
    const myText = h("textarea", { name: "mine" }); myText.value = mine;
    const panel = h("section", { class: "panel conflict", "aria-labelledby": "conflict-title" },
      h("h2", { id: "conflict-title" }, "Someone else changed this entry meanwhile"),
      h("p", { role: "alert" }, error.message),
      h("div", { class: "sides" },
        h("div", {}, field("Your text (edit it to merge)", myText)),
        h("div", {}, h("h3", {}, theirs ? `Their version ${theirs.version} (by ${theirs.updated_by})` : "Their version: deleted"),
          h("pre", { class: "content", tabindex: "0", "aria-label": "Their text" }, theirs ? theirs.content : ""))),
      h("div", { class: "row" },
        h("button", { type: "button", class: "primary", onclick: () => {
          const keep = myText.value;
          entry = theirs || entry;
          const ta = editor(keep, theirs || { version: 0 });
          ta.form.requestSubmit();
        } }, "Keep mine (save over theirs)"),
        h("button", { type: "button", onclick: () => { if (theirs) { entry = theirs; showEntry(); } else location.hash = link(["memories", memory], { user }); } }, "Take theirs"),
        h("button", { type: "button", onclick: () => { const keep = myText.value; entry = theirs || entry; editor(keep, theirs || { version: 0 }); } }, "Merge in the editor")));
    view.replaceChildren(panel);
    myText.focus();
  }

  function confirmDelete() {
    const box = errorBox();
    const panel = h("div", { class: "panel", role: "alertdialog", "aria-labelledby": "del-title" },
      h("p", { id: "del-title" }, `Delete ${name} (version ${entry.version})? Its history stays for 30 days.`),
      h("div", { class: "row" },
        h("button", { type: "button", class: "danger", onclick: async () => {
          try {
            await api("DELETE", path, { query: { user }, headers: { "If-Match": `"${entry.version}"` } });
            location.hash = link(["memories", memory], { user });
          } catch (e) { say(box, e.message); }
        } }, "Delete"), h("button", { type: "button", onclick: () => panel.remove() }, "Keep it")), box);
    view.append(panel);
    panel.querySelector("button").focus();
  }

  async function loadHistory() {
    let items;
    try { items = (await api("GET", `${path}/history`, { query: { user } })).data.items; }
    catch (e) { historyBox.replaceChildren(h("p", { class: "error", role: "alert" }, e.message)); return; }
    const options = () => items.map((it) => h("option", { value: String(it.version) }, `v${it.version} · ${it.operation} · ${it.updated_by}`));
    const from = h("select", { name: "from" }, options());
    const to = h("select", { name: "to" }, options());
    if (items.length > 1) from.value = String(items[1].version);
    const out = h("div", { "aria-live": "polite" });
    const box = errorBox();
    const showDiff = () => {
      const a = items.find((i) => String(i.version) === from.value), b = items.find((i) => String(i.version) === to.value);
      out.replaceChildren(h("h3", {}, `From v${a.version} to v${b.version}`), diffView(a.content || "", b.content || ""));
    };
    const rows = items.map((it) => h("tr", {},
      h("td", {}, `v${it.version}`), h("td", {}, it.operation), h("td", {}, it.updated_by), h("td", {}, fmtTime(it.changed_at)),
      h("td", {}, it.operation === "delete" || (entry && it.version === entry.version) ? "" :
        h("button", { type: "button", "aria-label": `Restore version ${it.version}`, onclick: async () => {
          try {
            await api("PUT", path, { query: { user }, headers: { "If-Match": `"${entry.version}"` },
              body: { content: it.content, description: it.description || undefined } });
            entry = (await api("GET", path, { query: { user } })).data;
            showEntry();
            say(view.appendChild(h("p", { role: "status" })), `Restored version ${it.version} as version ${entry.version}.`, true);
            loadHistory();
          } catch (e) { say(box, e.message); }
        } }, "Restore"))));
    historyBox.replaceChildren(h("h2", {}, "History (30 days)"), box,
      h("div", { class: "scroll" }, h("table", {}, h("thead", {}, h("tr", {},
        ["Version", "Change", "By", "When", ""].map((t) => h("th", { scope: "col" }, t)))), h("tbody", {}, rows))),
      h("form", { novalidate: true, class: "row", "aria-label": "Compare versions", onsubmit: (ev) => { ev.preventDefault(); showDiff(); } },
        h("div", {}, field("From", from)), h("div", {}, field("To", to)), h("button", { type: "submit" }, "Show diff")), out);
    historyBox.querySelector("h2").scrollIntoView?.({ block: "nearest" });
  }

  render(`Entry ${name}`, back, view, historyBox);
  if (entry) showEntry(); else editor("");
}

// a line diff: the longest common subsequence of lines, shown as kept, removed and added lines
export function lineDiff(a, b) {
  const x = a.split("\n"), y = b.split("\n");
  const n = x.length, m = y.length;
  const t = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--)
    t[i][j] = x[i] === y[j] ? t[i + 1][j + 1] + 1 : Math.max(t[i + 1][j], t[i][j + 1]);
  const out = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) { out.push([" ", x[i]]); i++; j++; }
    else if (t[i + 1][j] >= t[i][j + 1]) out.push(["-", x[i++]]);
    else out.push(["+", y[j++]]);
  }
  while (i < n) out.push(["-", x[i++]]);
  while (j < m) out.push(["+", y[j++]]);
  return out;
}
function diffView(a, b) {
  const lines = lineDiff(a, b);
  return h("div", { class: "diff", role: "region", "aria-label": "Differences", tabindex: "0" },
    lines.map(([op, text]) => op === "+" ? h("ins", {}, "+ " + text) : op === "-" ? h("del", {}, "- " + text) : h("span", {}, "  " + text)));
}

// ---------- agents ----------
pages.agents = async (parts, query) => (parts.length ? agentPage(parts[0], query.get("user") || "") : agentsList());

async function agentsList() {
  const { data } = await api("GET", "v1/agents");
  const rows = data.items.map((a) => h("tr", {},
    h("td", {}, h("a", { href: link(["agents", a.name], { user: a.user_id }) }, a.name)),
    h("td", {}, a.scope === "user" ? `user ${a.user_id}` : "account"),
    h("td", {}, a.memories.map((m) => `${m.name}${m.writable ? " (writable)" : ""}`).join(", ") || "—"),
    h("td", {}, a.capabilities.memory ? "writes memory" : "reads only")));
  render("Agents", h("div", { class: "scroll" }, h("table", {},
    h("thead", {}, h("tr", {}, ["Agent", "Scope", "Attached memories", "Memory capability"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 4 }, "No agents yet."))))),
    h("h2", {}, "New agent"), newAgentForm());
}

function newAgentForm() {
  const name = h("input", { type: "text", name: "agent", autocomplete: "off", spellcheck: "false" });
  const user = h("input", { type: "text", name: "user", autocomplete: "off" });
  const instructions = h("textarea", { name: "instructions" });
  const windowMessages = h("input", { type: "number", name: "window_messages", min: "1", max: "20" });
  const fields = { name: { field: "agent", label: "Name (lowercase letters, digits and . _ -)", control: name } };
  if (!userKey()) fields.user = { field: "user", label: "User id (empty: an account agent)", control: user };
  fields.instructions = { field: "instructions", label: "Instructions", control: instructions };
  fields.window = { field: "window_messages", label: "Window (messages, 1–20; empty: default)", control: windowMessages };
  return createForm("New agent", fields, "Create agent", async () => {
    const body = { instructions: instructions.value,
      window_messages: windowMessages.value === "" ? undefined : Number(windowMessages.value) };
    const { data } = await api("PUT", `v1/agents/${seg(name.value.trim())}`,
      { body, query: { user: user.value.trim() }, headers: { "If-None-Match": "*" } });
    location.hash = link(["agents", data.name], { user: data.user_id });
  });
}

async function agentPage(name, user) {
  const path = `v1/agents/${seg(name)}`;
  let agent = (await api("GET", path, { query: { user } })).data;
  const box = errorBox();
  const instructions = h("textarea", { name: "instructions" }); instructions.value = agent.instructions || "";
  const capability = h("input", { type: "checkbox", name: "capabilities.memory", checked: agent.capabilities.memory });
  const windowMessages = h("input", { type: "number", name: "window_messages", min: "1", max: "20", value: agent.window_messages ?? "" });
  const summaryTokens = h("input", { type: "number", name: "context.summary_tokens", value: agent.context.summary_tokens });
  const summaryMessages = h("input", { type: "number", name: "context.summary_messages", value: agent.context.summary_messages });
  const writeShared = h("input", { type: "checkbox", name: "user_conversations_write_shared", checked: agent.user_conversations_write_shared });
  const memRows = h("div", {});
  const memoriesError = h("p", { class: "error", id: "memories-error", role: "alert", hidden: true });
  const memControls = [];
  function addMemoryRow(m) {
    const nameInput = h("input", { type: "text", name: "memory-name", value: m.name, autocomplete: "off" });
    const writable = h("input", { type: "checkbox", name: "memory-writable", checked: m.writable });
    const row = h("div", { class: "row" },
      h("div", { class: "grow" }, field(`Attached memory ${memControls.length + 1}`, nameInput)),
      h("label", { class: "inline" }, writable, "writable"),
      h("button", { type: "button", onclick: () => { row.remove(); memControls.splice(memControls.indexOf(entry), 1); } }, "Detach"));
    const entry = { nameInput, writable };
    memControls.push(entry);
    memRows.append(row);
    return nameInput;
  }
  agent.memories.forEach(addMemoryRow);
  const controls = { instructions, "capabilities.memory": capability, window_messages: windowMessages,
    "context.summary_tokens": summaryTokens, "context.summary_messages": summaryMessages,
    user_conversations_write_shared: writeShared };
  const form = h("form", { novalidate: true, "aria-label": "Agent settings", onsubmit: async (ev) => {
    ev.preventDefault();
    for (const c of Object.values(controls)) showFieldError(c, "");
    memoriesError.hidden = true; say(box, "");
    const body = {
      instructions: instructions.value,
      memories: memControls.map((c) => ({ name: c.nameInput.value.trim(), writable: c.writable.checked })),
      capabilities: { memory: capability.checked },
      window_messages: windowMessages.value === "" ? null : Number(windowMessages.value),
      context: { summary_tokens: Number(summaryTokens.value), summary_messages: Number(summaryMessages.value) },
      user_conversations_write_shared: writeShared.checked,
    };
    try {
      const res = await api("PUT", path, { body, query: { user }, headers: { "If-Match": `"${agent.version}"` } });
      agent = res.data;
      say(box, `Saved: version ${agent.version}.`, true);
    } catch (e) {
      const f = e.details.field || "";
      const target = controls[f];
      if (target) { showFieldError(target, e.message); target.focus(); }
      else if (f.startsWith("memories") || e.details.memory) { memoriesError.textContent = e.message; memoriesError.hidden = false; }
      else say(box, e.message);
    }
  } },
    field("Instructions", instructions),
    h("fieldset", {}, h("legend", {}, "Attached memories (read-only unless writable)"), memRows, memoriesError,
      h("button", { type: "button", onclick: () => addMemoryRow({ name: "", writable: false }).focus() }, "Attach a memory")),
    h("div", { class: "field" }, h("label", { class: "inline" }, capability, "Memory capability: the agent may create and change entries"),
      h("p", { class: "error", id: (capability.id = nextId("f")) + "-error", hidden: true })),
    h("div", { class: "field" }, h("label", { class: "inline" }, writeShared, "In a user's conversation, a save asking for shared writes the account layer"),
      h("p", { class: "error", id: (writeShared.id = nextId("f")) + "-error", hidden: true })),
    h("div", { class: "row" },
      h("div", { class: "grow" }, field("Window (messages, 1–20; empty: default)", windowMessages)),
      h("div", { class: "grow" }, field("Summary pass after tokens", summaryTokens)),
      h("div", { class: "grow" }, field("Summary pass after messages", summaryMessages))),
    h("button", { type: "submit", class: "primary" }, "Save settings"), box);
  const deleteSlot = h("div", {});
  const deleteBtn = h("button", { type: "button", class: "danger", onclick: () => confirmPanel(deleteSlot, deleteBtn, {
    title: `Move agent ${name} to the trash, with its own memory ${agent.own_memory}?`,
    lines: ["It answers no more; its conversations are kept.",
      "Restore brings it back as it was within 30 days (Trash); after that it is deleted for good, conversations included."],
    confirmText: `Move ${name} to the trash`,
    run: async () => {
      await api("DELETE", path, { query: { user: agent.user_id } });
      location.hash = "#/trash";
    },
    // its own memory attached by another agent keeps it out of the trash
    refused: attachedRefusal,
  }) }, "Delete agent…");
  render(`Agent ${name}`, h("p", {}, h("a", { href: "#/agents" }, "← All agents")),
    h("dl", { class: "meta" }, h("dt", {}, "Scope"), h("dd", {}, agent.scope === "user" ? `user ${agent.user_id}` : "account"),
      h("dt", {}, "Own memory"), h("dd", {}, h("a", { href: link(["memories", agent.own_memory], { user: agent.user_id }) }, agent.own_memory)),
      h("dt", {}, "Version"), h("dd", {}, String(agent.version))),
    form, h("h2", {}, "Delete"), h("div", { class: "row" }, deleteBtn), deleteSlot);
}

// ---------- trash: deleted memories and agents, restored within 30 days; an agent deleted for good ----------
// when the trash purges it: its date, and how far off that is
function purgeWhen(t) {
  if (!t) return "—";
  const days = Math.ceil((Date.parse(t) - Date.now()) / 86400000);
  return `${fmtTime(t)} (${days > 1 ? `in ${days} days` : days === 1 ? "within a day" : "due now"})`;
}
const scopeOf = (x) => (x.scope === "user" ? `user ${x.user_id}` : "account");
const ownerOf = (memory) => (memory.startsWith("agent:") ? memory.slice(6) : null); // an agent's own memory

pages.trash = async () => {
  const [memories, agents] = await Promise.all([
    api("GET", "v1/memories", { query: { trash: "true" } }), api("GET", "v1/agents", { query: { trash: "true" } })]);
  const status = h("p", { role: "status", tabindex: "-1", class: "ok", hidden: true });
  const trashedAgents = new Set(agents.data.items.map((a) => a.name));
  // an agent's own memory goes and comes back with its agent: shown on the agent's row
  const own = new Map(memories.data.items.filter((m) => trashedAgents.has(ownerOf(m.name))).map((m) => [m.name, m]));
  const agentBody = h("tbody", {}), memoryBody = h("tbody", {});
  const empty = (body, columns, what) => {
    if (!body.querySelector("tr.item")) body.replaceChildren(h("tr", {}, h("td", { colspan: columns }, `No ${what} in the trash.`)));
  };
  const done = (body, columns, what, ...message) => {
    status.replaceChildren(...message); status.hidden = false; status.focus();
    empty(body, columns, what);
  };
  // one thing in the trash: its row, and a row below it for the confirmation and the API's refusal
  function item(body, columns, cells, actions) {
    const slot = h("td", { colspan: columns });
    const row = h("tr", { class: "item" }, cells.map((c) => h("td", {}, c)), h("td", {}, h("div", { class: "row" }, actions(slot, () => { row.remove(); below.remove(); }))));
    const below = h("tr", { class: "below" }, slot);
    body.append(row, below);
  }
  const refusal = (slot, e) => slot.replaceChildren(h("p", { class: "error", role: "alert" }, e.message));

  for (const a of agents.data.items) {
    const ownMemory = own.get(a.own_memory);
    item(agentBody, 5, [a.name, scopeOf(a), fmtTime(a.deleted_at), purgeWhen(a.purge_after)], (slot, remove) => {
      const restore = h("button", { type: "button", "aria-label": `Restore agent ${a.name}`, onclick: async () => {
        slot.replaceChildren();
        try {
          await api("POST", `v1/agents/${seg(a.name)}/restore`, { query: { user: a.user_id } });
          remove();
          done(agentBody, 5, "agents", `Restored agent ${a.name}, with its own memory: it is back in `, h("a", { href: link(["agents", a.name], { user: a.user_id }) }, "its page"), " and in Agents.");
        } catch (e) { refusal(slot, e); }
      } }, "Restore");
      const purge = h("button", { type: "button", class: "danger", "aria-label": `Delete for good… (agent ${a.name})`, onclick: () => confirmPanel(slot, purge, {
        title: `Delete agent ${a.name} for good? This cannot be undone. What goes:`,
        lines: [`its settings and instructions`,
          `its own memory ${a.own_memory}${ownMemory ? `, ${plural(ownMemory.entry_count, "entry", "entries")}` : ""}`,
          "its conversations, the account's and every user's: their journals, checkpoints and workspace files",
          a.memories.length ? `(the memories it attaches stay: ${a.memories.map((m) => m.name).join(", ")})` : null].filter(Boolean),
        confirmText: `Delete ${a.name} for good`,
        run: async () => {
          const { data } = await api("POST", `v1/agents/${seg(a.name)}/purge`, { query: { user: a.user_id } });
          remove();
          done(agentBody, 5, "agents", `Deleted agent ${a.name} for good: `,
            Object.entries(data.removed).map(([k, v]) => `${k.replaceAll("_", " ")} ${v}`).join(", "), ".");
        },
      }) }, "Delete for good…");
      return [restore, purge];
    });
  }
  for (const m of memories.data.items) {
    if (own.has(m.name)) continue;
    const owner = ownerOf(m.name);
    item(memoryBody, 6, [m.name, scopeOf(m), String(m.entry_count), fmtTime(m.deleted_at), purgeWhen(m.purge_after)], (slot, remove) => [
      owner ? h("span", { class: "muted" }, `comes back with agent ${owner}`) :
        h("button", { type: "button", "aria-label": `Restore memory ${m.name}`, onclick: async () => {
          slot.replaceChildren();
          try {
            await api("POST", `v1/memories/${seg(m.name)}/restore`, { query: { user: m.user_id } });
            remove();
            done(memoryBody, 6, "memories", `Restored memory ${m.name}: it is back in `, h("a", { href: link(["memories", m.name], { user: m.user_id }) }, "its page"), " and in Memories.");
          } catch (e) { refusal(slot, e); }
        } }, "Restore")]);
  }
  const table = (label, heads, body) => h("div", { class: "scroll" }, h("table", { "aria-label": label },
    h("thead", {}, h("tr", {}, heads.map((t) => h("th", { scope: "col" }, t)))), body));
  empty(agentBody, 5, "agents");
  empty(memoryBody, 6, "memories");
  render("Trash",
    h("p", { class: "muted" }, "Deleted agents and memories stay here for 30 days, then they are purged. Restore brings one back as it was; an agent comes back with its own memory."),
    status,
    h("h2", {}, "Agents"), table("Agents in the trash", ["Agent", "Scope", "Deleted", "Purged", ""], agentBody),
    h("h2", {}, "Memories"), table("Memories in the trash", ["Memory", "Scope", "Entries", "Deleted", "Purged", ""], memoryBody));
};

// ---------- erase a user ----------
pages.erase = async () => {
  const userInput = h("input", { type: "text", name: "user", autocomplete: "off" });
  const out = h("div", { "aria-live": "polite" });
  const form = h("form", { novalidate: true, class: "row", "aria-label": "Erase a user", onsubmit: async (ev) => {
    ev.preventDefault();
    showFieldError(userInput, "");
    const user = userInput.value.trim();
    if (!user) return showFieldError(userInput, "Type the user id.");
    let memories, agents;
    try {
      [memories, agents] = await Promise.all([api("GET", "v1/memories", { query: { user } }), api("GET", "v1/agents", { query: { user } })]);
    } catch (e) { return showFieldError(userInput, e.message); }
    const own = memories.data.items.filter((m) => m.user_id === user);
    const ownAgents = agents.data.items.filter((a) => a.user_id === user);
    const inShared = memories.data.items.filter((m) => m.user_id !== user);
    const box = errorBox();
    const panel = h("div", { class: "panel conflict", role: "alertdialog", "aria-labelledby": "erase-title" },
      h("h2", { id: "erase-title" }, `Erase everything of ${user}?`),
      h("ul", {},
        h("li", {}, `${ownAgents.length} own agent(s), purged with their conversations: ${ownAgents.map((a) => a.name).join(", ") || "none"}`),
        h("li", {}, `${own.length} own memor${own.length === 1 ? "y" : "ies"} holding ${own.reduce((s, m) => s + m.entry_count, 0)} entries`),
        h("li", {}, `their layer in the account's memories (${inShared.map((m) => m.name).join(", ") || "none"}), their conversations with every agent, their workspace files, and their keys`)),
      h("p", {}, "This cannot be undone."),
      h("div", { class: "row" },
        h("button", { type: "button", class: "danger", onclick: async () => {
          try {
            const { data } = await api("DELETE", `v1/users/${seg(user)}`);
            out.replaceChildren(h("h2", {}, "Receipt"), h("p", { role: "status", class: "ok" }, `Erased ${data.user}.`),
              h("dl", { class: "meta", id: "receipt" }, Object.entries(data.removed).map(([k, v]) => [h("dt", {}, k.replaceAll("_", " ")), h("dd", {}, String(v))])));
          } catch (e) { say(box, e.message); }
        } }, `Erase ${user}`),
        h("button", { type: "button", onclick: () => out.replaceChildren() }, "Cancel")), box);
    out.replaceChildren(panel);
    panel.querySelector("button").focus();
  } }, h("div", { class: "grow" }, field("User id", userInput)), h("button", { type: "submit" }, "Review what goes…"));
  render("Erase a user", h("p", { class: "muted" }, "Removes a user's agents, memories, layers, conversations, workspace files and keys (account key only)."), form, out);
};


// ---------- conversations: journal, tool calls, checkpoint, next context, compact; workspace files ----------
pages.conversations = async (parts, query) => {
  const user = query.get("user") || "";
  if (parts.length >= 2) return conversationPage(parts[0], parts[1], user);
  return conversationsList(parts[0] || query.get("agent") || "", user);
};

async function conversationsList(agentName, user) {
  const agents = (await api("GET", "v1/agents", { query: { user } })).data.items;
  const agentSelect = h("select", { name: "agent" }, h("option", { value: "" }, "Choose an agent"),
    agents.map((a) => h("option", { value: a.name }, a.name)));
  agentSelect.value = agentName;
  const userInput = h("input", { type: "text", name: "user", value: user, autocomplete: "off" });
  const form = h("form", { novalidate: true, class: "row", "aria-label": "Whose conversations", onsubmit: (ev) => {
    ev.preventDefault();
    if (!agentSelect.value) return showFieldError(agentSelect, "Choose an agent.");
    location.hash = link(["conversations", agentSelect.value], { user: userInput.value.trim() });
  } }, h("div", { class: "grow" }, field("Agent", agentSelect)),
    h("div", { class: "grow" }, field("User id (empty: the account's own conversations)", userInput)),
    h("button", { type: "submit" }, "Show conversations"));
  const out = [];
  if (agentName) {
    try {
      const items = (await api("GET", `v1/agents/${seg(agentName)}/conversations`, { query: { user } })).data.items;
      out.push(h("h2", {}, `${agentName} with ${user ? `user ${user}` : "the account"}`),
        h("div", { class: "scroll" }, h("table", {},
          h("thead", {}, h("tr", {}, ["Conversation", "Messages", "Turns", "Summary covers", "Updated"].map((t) => h("th", { scope: "col" }, t)))),
          h("tbody", {}, items.length ? items.map((c) => h("tr", {},
            h("td", {}, h("a", { href: link(["conversations", agentName, c.key], { user }) }, c.key)),
            h("td", {}, String(c.messages)), h("td", {}, String(c.turns)),
            h("td", {}, c.covers_through_seq ? `through seq ${c.covers_through_seq}` : "nothing yet"), h("td", {}, fmtTime(c.updated_at))))
            : h("tr", {}, h("td", { colspan: 5 }, "No conversations."))))));
    } catch (e) { out.push(h("p", { class: "error", role: "alert" }, e.message)); }
    out.push(journalSearch(agentName, user));
  }
  render("Conversations", form, ...out);
}

// journal search across this user's conversations with the agent; the words found are marked in each passage
function journalSearch(agentName, user) {
  const q = h("input", { type: "search", name: "q", autocomplete: "off" });
  const results = h("div", { "aria-live": "polite" });
  const form = h("form", { novalidate: true, class: "row", role: "search", "aria-label": "Journal search", onsubmit: async (ev) => {
    ev.preventDefault();
    showFieldError(q, "");
    try {
      const { data } = await api("GET", `v1/agents/${seg(agentName)}/messages/search`, { query: { q: q.value, user, limit: 20 } });
      results.replaceChildren(
        h("p", { class: "search-mode" }, `Answered by: ${data.mode}`, data.fallback ? ` (fallback: ${data.fallback})` : "",
          data.stages && data.stages.length ? ` · stages: ${data.stages.join(" → ")}` : "",
          data.index_lag ? ` · index ${data.index_lag} message${data.index_lag === 1 ? "" : "s"} behind` : "",
          ` · ${data.items.length} hit${data.items.length === 1 ? "" : "s"}`),
        ...data.items.map((hit) => h("div", { class: "hit" },
          h("a", { href: link(["conversations", agentName, hit.conversation], { user }) }, hit.conversation),
          ` · #${hit.seq} · ${hit.role} · ${(hit.created_at || "").slice(0, 16).replace("T", " ")} `,
          h("span", { class: "badge" }, `score ${hit.score.toFixed(3)}`),
          h("div", {}, highlight(hit.snippet, q.value)))));
    } catch (e) { results.replaceChildren(); showFieldError(q, e.message); }
  } }, h("div", { class: "grow" }, field("Search the journals", q)), h("button", { type: "submit" }, "Search"));
  return h("section", {}, h("h2", {}, "Journal search"), form, results);
}
function highlight(text, query) {
  const words = query.toLowerCase().match(/[\p{L}\p{N}]+/gu) || [];
  if (!words.length) return [text];
  const escaped = words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  const pattern = new RegExp(`(?<![\\p{L}\\p{N}])(?:${escaped.join("|")})[\\p{L}\\p{N}]*`, "giu");
  const parts = [];
  let last = 0;
  for (const m of text.matchAll(pattern)) {
    parts.push(text.slice(last, m.index), h("mark", {}, m[0]));
    last = m.index + m[0].length;
  }
  parts.push(text.slice(last));
  return parts;
}

async function conversationPage(agentName, key, user) {
  const base = `v1/agents/${seg(agentName)}/conversations/${seg(key)}`;
  const [conv, agent] = await Promise.all([api("GET", base, { query: { user } }), api("GET", `v1/agents/${seg(agentName)}`, { query: { user } })]);
  const info = h("dl", { class: "meta" });
  const showInfo = (c) => info.replaceChildren(
    h("dt", {}, "Whose"), h("dd", {}, c.user_id ? `user ${c.user_id}` : "the account"),
    h("dt", {}, "Messages · turns"), h("dd", {}, `${c.messages} · ${c.turns}`),
    h("dt", {}, "Summary covers"), h("dd", { id: "covers" }, c.covers_through_seq ? `through seq ${c.covers_through_seq}` : "nothing yet"),
    h("dt", {}, "Unfolded"), h("dd", {}, `${c.unfolded_messages} messages, ${c.unfolded_tokens} tokens`));
  showInfo(conv.data);

  // the journal, a page at a time; tool calls open to their whole arguments and result
  const journal = h("ol", { class: "journal", "aria-label": "Journal" });
  const more = h("button", { type: "button", hidden: true }, "Load more messages");
  let after = 0;
  async function loadJournal() {
    const { data } = await api("GET", `${base}/messages`, { query: { user, after, limit: 50 } });
    for (const m of data.items) journal.append(messageItem(m));
    after = data.next_cursor ? Number(data.next_cursor) : after;
    more.hidden = !data.next_cursor;
  }
  function messageItem(m) {
    const head = `#${m.seq} · turn ${m.turn} · ${m.role}${m.tool_name ? ` · ${m.tool_name}` : ""} · ${m.tokens} tokens`;
    if (!m.tool_call_id) return h("li", { class: "msg" }, h("div", { class: "muted" }, head), h("pre", { class: "content" }, m.content));
    const body = h("div", {}, h("p", { class: "muted" }, "Loading…"));
    const details = h("details", { class: "msg" }, h("summary", {}, head, ` · call ${m.tool_call_id}`), body);
    details.addEventListener("toggle", async () => {
      if (!details.open || details.dataset.loaded) return;
      try {
        const { data } = await api("GET", `${base}/tool-calls/${seg(m.tool_call_id)}`, { query: { user } });
        details.dataset.loaded = "1";
        body.replaceChildren(h("h3", {}, "Arguments"), h("pre", { class: "content" }, JSON.stringify(data.arguments, null, 2)),
          h("h3", {}, "Result"), h("pre", { class: "content" }, data.result !== null ? JSON.stringify(data.result, null, 2) : data.result_content || "(none yet)"));
      } catch (e) { body.replaceChildren(h("p", { class: "error", role: "alert" }, e.message)); }
    });
    return h("li", {}, details);
  }
  more.addEventListener("click", loadJournal);

  // the checkpoint, editable: an edit is a save of its entry with its version (the next pass starts from it)
  const checkpointBox = h("section", { "aria-labelledby": "cp-title" });
  async function loadCheckpoint() {
    let cp;
    try { cp = (await api("GET", `${base}/checkpoint`, { query: { user } })).data; }
    catch (e) { checkpointBox.replaceChildren(h("h2", { id: "cp-title" }, "Checkpoint"), h("p", { class: "muted" }, e.message)); return; }
    const text = h("textarea", { name: "checkpoint" }); text.value = cp.content;
    const box = errorBox();
    const path = `v1/memories/${seg(cp.memory)}/entries/${seg(cp.name)}`;
    checkpointBox.replaceChildren(h("h2", { id: "cp-title" }, "Checkpoint"),
      h("p", { class: "muted" }, `Version ${cp.version} by ${cp.updated_by}; covers through seq ${cp.covers_through_seq}; ${cp.passes_total} pass(es); ${cp.lines_by_hand} line(s) by hand.`),
      h("form", { novalidate: true, "aria-label": "Edit checkpoint", onsubmit: async (ev) => {
        ev.preventDefault(); say(box, ""); showFieldError(text, "");
        try {
          await api("PUT", path, { query: { user }, headers: { "If-Match": `"${cp.version}"` }, body: { content: text.value } });
          await loadCheckpoint();
          say(checkpointBox.appendChild(h("p", { role: "status" })), "Checkpoint saved; the next pass starts from it.", true);
          loadContext();
        } catch (e) { showFieldError(text, e.status === 412 ? `${e.message} (reload to see the pass's text)` : e.message); }
      } }, field("Summary text", text), h("button", { type: "submit", class: "primary" }, "Save checkpoint"), box));
  }

  // what the next turn's context holds, part by part with token counts
  const contextBox = h("section", { "aria-labelledby": "ctx-title" });
  async function loadContext() {
    const { data } = await api("GET", `${base}/context`, { query: { user } });
    const part = (title, p, text) => h("details", { class: "msg" }, h("summary", {}, `${title}: ${p ? p.tokens : 0} tokens`), h("pre", { class: "content" }, text || "(empty)"));
    contextBox.replaceChildren(h("h2", { id: "ctx-title" }, `Next turn's context: ${data.tokens} tokens`),
      part("Pinned block", data.pinned, data.pinned && data.pinned.text),
      part("Memory index", data.memory_index, data.memory_index && data.memory_index.text),
      part("Summary", data.summary, data.summary && data.summary.text),
      part(`Window (${data.window.messages.length} of at most ${data.window.cap} messages)`, data.window,
        data.window.messages.map((m) => `#${m.seq} ${m.role}: ${m.content || (m.tool_name ? `${m.tool_name} ${JSON.stringify(m.arguments ?? m.result)}` : "")}`).join("\n")));
  }

  // compact now: the pass runs in the background; its progress is the conversation's covers_through_seq
  const compactStatus = h("p", { role: "status", "aria-live": "polite" });
  const compactBtn = h("button", { type: "button", onclick: async () => {
    compactBtn.disabled = true;
    const before = (await api("GET", base, { query: { user } })).data.covers_through_seq;
    try {
      const { data } = await api("POST", `${base}/compact`, { query: { user } });
      say(compactStatus, `Pass started (job ${data.job_id})…`, true);
      for (let i = 0; i < 30; i++) {
        await new Promise((r) => setTimeout(r, 1000));
        const c = (await api("GET", base, { query: { user } })).data;
        if (c.covers_through_seq !== before) {
          showInfo(c);
          say(compactStatus, `Pass done: the summary covers through seq ${c.covers_through_seq}.`, true);
          await Promise.all([loadCheckpoint(), loadContext()]);
          break;
        }
        if (i === 29) say(compactStatus, "The pass folded nothing yet (it folds only rows that left the recent window).", true);
      }
    } catch (e) { say(compactStatus, e.message); }
    compactBtn.disabled = false;
  } }, "Compact now");

  // the conversation's workspace: files, drag-and-drop upload through an upload link, delete
  const filesBox = h("section", { "aria-labelledby": "ws-title" });
  async function loadFiles() {
    const box = errorBox();
    let items = [];
    try { items = (await api("GET", `${base}/workspace/files`, { query: { user } })).data.items; }
    catch (e) { say(box, e.message); }
    const picker = h("input", { type: "file", name: "file", multiple: true });
    const drop = h("div", { class: "drop", tabindex: "-1" }, "Drop files here, or choose them: ", field("Files to upload", picker));
    const upload = async (files) => {
      say(box, "");
      for (const f of files) {
        try {
          const { data: linkData } = await api("POST", `${base}/workspace/links`, { query: { user }, body: { path: f.name, method: "PUT", size_bytes: f.size } });
          const res = await fetch(uploadTarget(linkData.url), { method: "PUT", body: f, credentials: "omit" });
          if (!res.ok) { const t = await res.text(); throw new Error(`upload of ${f.name} refused: ${t}`); }
        } catch (e) { say(box, e.message); return; }
      }
      await loadFiles();
      say(filesBox.appendChild(h("p", { role: "status" })), `Uploaded ${[...files].map((f) => f.name).join(", ")}.`, true);
    };
    picker.addEventListener("change", () => upload(picker.files));
    drop.addEventListener("dragover", (ev) => { ev.preventDefault(); drop.classList.add("over"); });
    drop.addEventListener("dragleave", () => drop.classList.remove("over"));
    drop.addEventListener("drop", (ev) => { ev.preventDefault(); drop.classList.remove("over"); upload(ev.dataTransfer.files); });
    filesBox.replaceChildren(h("h2", { id: "ws-title" }, "Workspace files"), box,
      h("div", { class: "scroll" }, h("table", {},
        h("thead", {}, h("tr", {}, ["File", "Size (bytes)", "Modified", ""].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, items.length ? items.map((f) => h("tr", {},
          h("td", {}, h("a", { href: f.url, download: f.path.split("/").pop() }, f.path)),
          h("td", {}, f.size_bytes.toLocaleString("en")), h("td", {}, fmtTime(f.modified_at)),
          h("td", {}, h("button", { type: "button", class: "danger", "aria-label": `Delete ${f.path}`, onclick: async () => {
            try { await api("DELETE", `${base}/workspace/files/${f.path.split("/").map(seg).join("/")}`, { query: { user } }); await loadFiles(); }
            catch (e) { say(box, e.message); }
          } }, "Delete"))))
          : h("tr", {}, h("td", { colspan: 4 }, "No files."))))),
      drop);
  }

  // every part is filled before the page shows: nothing below a part moves when its data comes
  await Promise.all([loadJournal(), loadCheckpoint(), loadContext(), loadFiles()]);
  render(`Conversation ${key}`,
    h("p", {}, h("a", { href: link(["conversations", agentName], { user }) }, `← ${agentName}'s conversations`),
      " · own memory ", h("a", { href: link(["memories", agent.data.own_memory], { user }) }, agent.data.own_memory)),
    info, h("div", { class: "row" }, compactBtn), compactStatus,
    checkpointBox, contextBox, h("h2", {}, "Journal"), journal, more, filesBox);
}

// every page is registered: the first one can be routed (a reload of any address opens its page)
route();
