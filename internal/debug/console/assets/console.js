// The APF console: draws the state the page came with (the
// "initial-state" data block, as of the page's request) at once, then
// reads the server-sent "state" events of ./events (one a second) and
// redraws the page. Everything received is written as text.
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const history = new Map(); // level name -> {time: [], executing: [], ...}
  const columns = ["time", "executing", "waiting", "seatsInUse", "dispatched", "rejected", "queueFull", "concurrencyLimit", "timeOut"];
  let historySeconds = 300;
  let selected = levelFromHash();
  let source = null;
  let retryTimer = null;
  let lastState = null;
  let lastEvent = 0;
  // detailPending is true while the chosen level's queue picture has not
  // come yet: the page's own state and the redraw on a choice have none.
  let detailPending = true;

  // The status turns to "reconnecting" when no event came for 3 s.
  setInterval(() => {
    if (lastEvent && Date.now() - lastEvent > 3000 && source && source.readyState !== EventSource.CLOSED) {
      setStatus("status-reconnecting", "reconnecting…");
    }
  }, 1000);

  function levelFromHash() {
    const m = /^#level=(.*)$/.exec(location.hash);
    return m ? decodeURIComponent(m[1]) : "";
  }

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = String(text);
    return e;
  }

  function svg(tag, attrs) {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs) e.setAttribute(k, String(attrs[k]));
    return e;
  }

  function num(n) {
    return Number(n).toLocaleString("en-US");
  }

  // ms shows seconds in milliseconds, to two significant places below 10.
  function ms(seconds) {
    const v = seconds * 1000;
    return (v < 10 ? v.toPrecision(2) : Math.round(v).toString()) + " ms";
  }

  // paced describes what a paced level measured, for its type's title.
  function paced(l) {
    if (!l.paced) return "";
    if (!l.pacedServiceSeconds) return "; paced, no service time measured yet";
    return `; paced: service time ${ms(l.pacedServiceSeconds)}, a start every ${ms(l.pacedTurnSeconds)} a seat`;
  }

  function setStatus(cls, text) {
    const s = document.getElementById("status");
    s.className = cls;
    s.textContent = text;
  }

  // connect opens the event stream for the chosen level; the browser
  // reconnects by itself when a stream ends, and we do when it fails.
  function connect() {
    if (source) source.close();
    clearTimeout(retryTimer);
    const url = "events" + (selected ? "?level=" + encodeURIComponent(selected) : "");
    source = new EventSource(url);
    source.addEventListener("state", (ev) => {
      lastEvent = Date.now();
      setStatus("status-live", "live");
      detailPending = false;
      try {
        render(JSON.parse(ev.data));
      } catch (e) {
        setStatus("status-reconnecting", "bad data: " + e.message);
      }
    });
    source.addEventListener("error", () => {
      if (source.readyState === EventSource.CLOSED) {
        setStatus("status-reconnecting", "disconnected, retrying…");
        retryTimer = setTimeout(connect, 2000);
      }
      // A stream that ends by itself is reopened within a second or two:
      // the watchdog below says so only if no event follows.
    });
  }

  // merge appends the samples newer than those held and keeps the last
  // historySeconds of them.
  function merge(level) {
    let h = history.get(level.name);
    const inc = level.history || {};
    if (!h) {
      h = {};
      for (const c of columns) h[c] = [];
      history.set(level.name, h);
    }
    const last = h.time.length ? h.time[h.time.length - 1] : -Infinity;
    const times = inc.time || [];
    for (let i = 0; i < times.length; i++) {
      if (times[i] <= last) continue;
      for (const c of columns) h[c].push((inc[c] || [])[i] || 0);
    }
    const extra = h.time.length - historySeconds;
    if (extra > 0) for (const c of columns) h[c].splice(0, extra);
    return h;
  }

  function sparkline(h, now) {
    // Lines in the upper 36 units, rejection marks in the lowest 4.
    const w = 240, ht = 40, lines = 35;
    const s = svg("svg", { class: "spark", viewBox: `0 0 ${w} ${ht}`, preserveAspectRatio: "none", role: "img" });
    const span = historySeconds * 1000;
    let top = 1;
    for (let i = 0; i < h.time.length; i++) top = Math.max(top, h.executing[i], h.waiting[i]);
    const x = (t) => w - ((now - t) / span) * w;
    const y = (v) => lines - (v / top) * (lines - 2);
    s.appendChild(svg("line", { class: "base", x1: 0, y1: lines + 0.5, x2: w, y2: lines + 0.5 }));
    for (const [col, cls] of [["executing", "exec"], ["waiting", "wait"]]) {
      let d = "";
      for (let i = 0; i < h.time.length; i++) {
        d += (i ? "L" : "M") + x(h.time[i]).toFixed(1) + " " + y(h[col][i]).toFixed(1);
      }
      if (d) s.appendChild(svg("path", { class: cls, d: d }));
    }
    for (let i = 0; i < h.time.length; i++) {
      if (h.rejected[i] > 0) s.appendChild(svg("rect", { class: "rej", x: x(h.time[i]) - 1, y: ht - 4, width: 2, height: 4 }));
    }
    const peak = el("title");
    peak.textContent = `peak ${top} over the last ${Math.round(historySeconds / 60)} minutes`;
    s.appendChild(peak);
    s.setAttribute("aria-label", `executing and waiting over the last ${Math.round(historySeconds / 60)} minutes, peak ${top}`);
    return s;
  }

  function lastOf(arr) {
    return arr.length ? arr[arr.length - 1] : 0;
  }

  function cell(row, cls, text, title) {
    const td = el("td", cls, text);
    if (title) td.title = title;
    row.appendChild(td);
    return td;
  }

  function renderLevels(state) {
    const body = document.querySelector("#levels tbody");
    const rows = document.createDocumentFragment();
    let focusName = null;
    if (document.activeElement && document.activeElement.classList.contains("level")) {
      focusName = document.activeElement.dataset.level;
    }
    let toFocus = null;
    for (const l of state.levels) {
      const h = merge(l);
      const tr = el("tr");
      tr.dataset.level = l.name;
      if (l.name === selected) tr.className = "selected";
      if (l.quiescing) tr.className += " quiescing";
      const th = el("th");
      th.scope = "row";
      const b = el("button", "level", l.name);
      b.type = "button";
      b.dataset.level = l.name;
      b.setAttribute("aria-pressed", l.name === selected ? "true" : "false");
      b.title = `${l.name}: show its queues`;
      b.addEventListener("click", () => choose(l.name));
      th.appendChild(b);
      tr.appendChild(th);
      if (l.name === focusName) toFocus = b;
      cell(tr, "type", l.type + (l.paced ? ", paced" : "") + (l.quiescing ? " (draining)" : ""),
        l.type === "Queuing" ? `${l.queues} queues, hand ${l.handSize}, ${l.queueLengthLimit} per queue` + paced(l) : "");
      const seats = cell(tr, "num seats", "", `nominal ${l.nominalSeats}, current ${l.currentSeats}, bounds ${l.lowerSeats}–${l.upperSeats}`);
      if (l.type === "Exempt") {
        seats.textContent = "—";
      } else {
        seats.appendChild(document.createTextNode(`${l.nominalSeats} → ${l.currentSeats} `));
        if (l.borrowed > 0) seats.appendChild(el("span", "borrow", `+${l.borrowed}`));
        else if (l.borrowed < 0) seats.appendChild(el("span", "lend", `−${-l.borrowed}`));
      }
      const inUse = cell(tr, "inuse", "", l.type === "Exempt" ? "an exempt level has no limit" : `${l.seatsInUse} of ${l.currentSeats} seats held; the mark is the nominal limit`);
      const box = el("div", "inusebox");
      if (l.type !== "Exempt") {
        const bar = el("div", "seatbar");
        const cap = Math.max(l.currentSeats, l.nominalSeats, l.seatsInUse, 1);
        const used = el("div", "used");
        used.style.width = (100 * l.seatsInUse / cap) + "%";
        bar.appendChild(used);
        const nom = el("div", "nominal");
        nom.style.left = `calc(${100 * l.nominalSeats / cap}% - 1px)`;
        bar.appendChild(nom);
        box.appendChild(bar);
      }
      box.appendChild(el("span", "count", `${l.seatsInUse}`));
      inUse.appendChild(box);
      cell(tr, "num executing", num(l.executing));
      cell(tr, "num waiting" + (l.waiting ? "" : " zero"), num(l.waiting));
      cell(tr, "history", "").appendChild(sparkline(h, state.time));
      cell(tr, "num dispatched-rate", num(lastOf(h.dispatched)));
      const rr = [lastOf(h.queueFull), lastOf(h.concurrencyLimit), lastOf(h.timeOut)];
      const rate = cell(tr, "num rejected-rate" + (rr[0] + rr[1] + rr[2] ? " rej" : " zero"), rr.join(" · "),
        "queue-full · concurrency-limit · time-out, last second");
      rate.dataset.total = String(rr[0] + rr[1] + rr[2]);
      cell(tr, "num dispatched-total", num(l.dispatched));
      const r = l.rejected;
      const rt = r["queue-full"] + r["concurrency-limit"] + r["time-out"];
      const tot = cell(tr, "num rejected-total" + (rt ? " rej" : " zero"),
        `${num(r["queue-full"])} · ${num(r["concurrency-limit"])} · ${num(r["time-out"])}`);
      tot.dataset.total = String(rt);
      rows.appendChild(tr);
    }
    body.replaceChildren(rows);
    if (toFocus) toFocus.focus();
    // Drop the history of levels that left.
    const names = new Set(state.levels.map((l) => l.name));
    for (const n of history.keys()) if (!names.has(n)) history.delete(n);
    renderSelect(state);
  }

  function renderSelect(state) {
    const sel = document.getElementById("level-select");
    const names = state.levels.map((l) => l.name);
    const have = Array.from(sel.options).slice(1).map((o) => o.value);
    if (have.join("\n") !== names.join("\n")) {
      const opts = [sel.options[0]];
      for (const n of names) {
        const o = el("option", "", n);
        o.value = n;
        opts.push(o);
      }
      sel.replaceChildren(...opts);
    }
    if (sel.value !== selected) sel.value = selected;
  }

  // flowColor gives each flow a colour of its own: the palette in the
  // order the flows first appear, then hues from a hash of the name.
  const palette = ["#2f6fdb", "#e08a00", "#2e9d5b", "#c2185b", "#7b4fd0", "#00838f", "#8d6e00", "#d84315", "#5c6bc0", "#6d8f00", "#ad1457", "#00897b"];
  const flowColors = new Map();
  function flowColor(flow) {
    let c = flowColors.get(flow);
    if (c) return c;
    if (flowColors.size < palette.length) {
      c = palette[flowColors.size];
    } else {
      let h = 0x811c9dc5;
      for (let i = 0; i < flow.length; i++) {
        h ^= flow.charCodeAt(i);
        h = Math.imul(h, 16777619) >>> 0;
      }
      c = `hsl(${h % 360}, 60%, 48%)`;
    }
    flowColors.set(flow, c);
    return c;
  }

  function renderDetail(state) {
    const d = state.selected;
    const box = document.getElementById("queues");
    const summary = document.getElementById("detail-summary");
    const flowsBody = document.querySelector("#flows tbody");
    if (!selected) {
      summary.textContent = "No level chosen.";
      box.replaceChildren();
      flowsBody.replaceChildren();
      return;
    }
    if (!d) {
      summary.textContent = detailPending ? `Loading the queues of ${selected}…` : `No level named ${selected}.`;
      box.replaceChildren();
      flowsBody.replaceChildren();
      return;
    }
    const waiting = d.queues.reduce((a, q) => a + q.waiting, 0);
    const executing = d.queues.reduce((a, q) => a + q.executing, 0) + d.queueless;
    summary.textContent = d.type === "Queuing"
      ? `${d.name}: ${d.queues.length} queues of at most ${d.queueLengthLimit}; ${waiting} waiting, ${executing} executing, ${d.flowCount} flows.`
      : `${d.name} (${d.type}): no queues; ${executing} executing, ${d.flowCount} flows.`;
    box.dataset.level = d.name;
    const frag = document.createDocumentFragment();
    for (const q of d.queues) {
      const qe = el("div", "queue");
      qe.setAttribute("role", "listitem");
      qe.tabIndex = 0;
      qe.dataset.index = String(q.index);
      qe.dataset.waiting = String(q.waiting);
      qe.dataset.executing = String(q.executing);
      if (q.waiting > 0) qe.classList.add("busy");
      if (d.queueLengthLimit > 0 && q.waiting >= d.queueLengthLimit) qe.classList.add("full");
      const flows = (q.flows || []).map((f) => `${f.flow}: ${f.waiting} waiting, ${f.executing} executing`);
      const label = `queue ${q.index}: ${q.waiting} waiting, ${q.executing} executing` + (flows.length ? "; " + flows.join("; ") : "");
      qe.title = label;
      qe.setAttribute("aria-label", label);
      qe.appendChild(el("div", "qi", q.index));
      const cells = el("div", "cells");
      const maxCells = 10;
      let drawn = 0;
      for (const f of q.flows || []) {
        for (let i = 0; i < f.executing + f.waiting && drawn < maxCells; i++, drawn++) {
          const c = el("div", "cell" + (i < f.executing ? " executing" : ""));
          c.style.backgroundColor = flowColor(f.flow);
          cells.appendChild(c);
        }
      }
      qe.appendChild(cells);
      const more = q.waiting + q.executing - drawn;
      qe.appendChild(el("div", "more", more > 0 ? `+${more}` : "\u00a0"));
      qe.appendChild(el("div", "counts", `${q.waiting}/${q.executing}`));
      frag.appendChild(qe);
    }
    box.replaceChildren(frag);
    const rows = document.createDocumentFragment();
    for (const f of d.flows) {
      const tr = el("tr");
      tr.dataset.flow = f.flow;
      const name = el("td", "name");
      const sw = el("span", "swatch");
      sw.style.backgroundColor = flowColor(f.flow);
      name.appendChild(sw);
      name.appendChild(document.createTextNode(f.flow));
      tr.appendChild(name);
      cell(tr, "num", num(f.executing));
      cell(tr, "num", num(f.waiting));
      cell(tr, "num", num(f.seats));
      cell(tr, "", (f.queues || []).join(", ") || "—");
      rows.appendChild(tr);
    }
    flowsBody.replaceChildren(rows);
  }

  function renderSchemas(state) {
    const body = document.querySelector("#schemas tbody");
    const rows = document.createDocumentFragment();
    for (const s of state.flowSchemas) {
      const tr = el("tr");
      tr.dataset.schema = s.name;
      cell(tr, "num", s.precedence);
      cell(tr, "name", s.name + (s.imagined ? " (built-in)" : ""));
      cell(tr, "", s.priorityLevel);
      cell(tr, "", s.distinguisher || "—");
      cell(tr, "num recent-hits" + (s.recentHits ? "" : " zero"), num(s.recentHits),
        `${num(s.dispatched)} dispatched and ${num(s.rejected)} rejected in all`);
      cell(tr, "num recent-rejected" + (s.recentRejected ? " rej" : " zero"), num(s.recentRejected));
      rows.appendChild(tr);
    }
    body.replaceChildren(rows);
    const secs = Math.round(state.recentSeconds);
    document.getElementById("recent-span").textContent = secs >= 60 ? `${secs} s` : `${secs} s (since start)`;
  }

  function seconds(v) {
    return v >= 1 ? v.toFixed(2) + " s" : Math.round(v * 1000) + " ms";
  }

  // renderShadow shows what a shadow configuration predicts, when the
  // server runs one, beside the live levels' rejections.
  function renderShadow(state) {
    const sec = document.getElementById("shadow-section");
    const sh = state.shadow;
    if (!sh) {
      sec.hidden = true;
      return;
    }
    sec.hidden = false;
    let summary = `Staged: ${sh.staged.length ? sh.staged.join(", ") : "nothing"}. ` +
      `${num(sh.arrived)} requests classified, ${num(sh.moved)} moved to another FlowSchema or level`;
    if (sh.dropped) summary += `, ${num(sh.dropped)} not followed`;
    summary += ".";
    if (sh.configError) summary += ` Reading the candidate failed (the previous one runs): ${sh.configError}`;
    document.getElementById("shadow-summary").textContent = summary;
    const live = new Map(state.levels.map((l) => [l.name, l]));
    const rows = document.createDocumentFragment();
    for (const l of sh.levels) {
      const tr = el("tr");
      tr.dataset.level = l.name;
      const th = el("th", "", l.name + (l.staged ? " (staged)" : ""));
      th.scope = "row";
      tr.appendChild(th);
      cell(tr, "type", l.type);
      cell(tr, "num", l.type === "Exempt" ? "—" : `${l.nominalSeats} → ${l.currentSeats}`);
      cell(tr, "num", num(l.executing));
      cell(tr, "num" + (l.waiting ? "" : " zero"), num(l.waiting));
      cell(tr, "num would-dispatch", num(l.dispatched));
      const r = l.rejected;
      const rt = r["queue-full"] + r["concurrency-limit"] + r["time-out"];
      const rej = cell(tr, "num would-reject" + (rt ? " rej" : " zero"),
        `${num(r["queue-full"])} · ${num(r["concurrency-limit"])} · ${num(r["time-out"])}`);
      rej.dataset.total = String(rt);
      const ll = live.get(l.name);
      if (ll) {
        const lr = ll.rejected["queue-full"] + ll.rejected["concurrency-limit"] + ll.rejected["time-out"];
        cell(tr, "num live-rejected" + (lr ? "" : " zero"), num(lr));
      } else {
        cell(tr, "num live-rejected zero", "new", "no live level has this name");
      }
      cell(tr, "num", `${seconds(l.meanWait)} · ${seconds(l.maxWait)}`);
      rows.appendChild(tr);
    }
    document.querySelector("#shadow-levels tbody").replaceChildren(rows);
    const moves = document.createDocumentFragment();
    for (const m of sh.moves) {
      const tr = el("tr");
      cell(tr, "name", `${m.liveFlowSchema} → ${m.livePriorityLevel}`);
      cell(tr, "name", `${m.flowSchema} → ${m.priorityLevel}`);
      cell(tr, "num", num(m.requests));
      moves.appendChild(tr);
    }
    if (!sh.moves.length) {
      const tr = el("tr");
      const td = cell(tr, "zero", "none: every request stays where it is");
      td.colSpan = 3;
      moves.appendChild(tr);
    }
    document.querySelector("#shadow-moves tbody").replaceChildren(moves);
  }

  // renderUpstreams lists the members of the gateway's pools, when the
  // server proxies to any.
  function renderUpstreams(state) {
    const sec = document.getElementById("upstreams-section");
    const ups = state.upstreams;
    if (!ups || !ups.length) {
      sec.hidden = true;
      return;
    }
    sec.hidden = false;
    const rows = document.createDocumentFragment();
    for (const u of ups) {
      const tr = el("tr");
      tr.dataset.upstream = u.upstream;
      cell(tr, "", u.pool);
      const th = el("th", "", u.upstream);
      th.scope = "row";
      tr.appendChild(th);
      let st = u.healthy ? "in" : "out";
      if (u.checkedOut) st += " (failing its checks)";
      if (u.ejectedUntil) st += ` (ejected until ${new Date(u.ejectedUntil).toLocaleTimeString()})`;
      cell(tr, u.healthy ? "" : "rej", st);
      cell(tr, u.lastCheck ? "" : "zero", u.lastCheck || "—");
      cell(tr, "num" + (u.outstanding ? "" : " zero"), num(u.outstanding));
      cell(tr, "num", num(u.dispatched));
      cell(tr, "num" + (u.failed ? " rej" : " zero"), num(u.failed));
      cell(tr, "num" + (u.ejections ? "" : " zero"), num(u.ejections));
      rows.appendChild(tr);
    }
    document.querySelector("#upstreams tbody").replaceChildren(rows);
  }

  // renderAdaptive states the server concurrency limit the gateway learns
  // from its upstream, when it learns one.
  function renderAdaptive(state) {
    const p = document.getElementById("adaptive-limit");
    const a = state.adaptiveLimit;
    if (!a) {
      p.hidden = true;
      return;
    }
    p.hidden = false;
    const ms = (s) => (s > 0 ? `${(s * 1000).toFixed(1)} ms` : "—");
    let text = `Server concurrency limit learned from the upstream: ${num(a.limitSeats)} seats ` +
      `(floor ${num(a.floorSeats)}, ceiling ${num(a.ceilingSeats)}); latency per seat ${ms(a.sampledSeconds)} ` +
      `against a baseline of ${ms(a.baselineSeconds)}.`;
    if (a.measuring) text += " Measuring the baseline: the limit is pinned low meanwhile.";
    p.textContent = text;
  }

  function render(state) {
    lastState = state;
    historySeconds = state.historySeconds || historySeconds;
    document.getElementById("history-span").textContent = `${Math.round(historySeconds / 60)} minutes`;
    document.getElementById("updated").textContent = "at " + new Date(state.time).toLocaleTimeString();
    renderLevels(state);
    renderDetail(state);
    renderSchemas(state);
    renderShadow(state);
    renderUpstreams(state);
    renderAdaptive(state);
    document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
  }

  function choose(name) {
    if (name === selected) return;
    selected = name;
    detailPending = true;
    history.clear();
    flowColors.clear();
    const url = new URL(location.href);
    url.hash = name ? "level=" + encodeURIComponent(name) : "";
    window.history.replaceState(null, "", url);
    if (lastState) {
      // Redraw the selection at once; the queue picture follows with the
      // next event.
      lastState.selected = null;
      render(lastState);
    }
    connect();
  }

  document.addEventListener("DOMContentLoaded", () => {
    document.getElementById("level-select").addEventListener("change", (e) => choose(e.target.value));
    window.addEventListener("hashchange", () => choose(levelFromHash()));
    // The state the page came with is drawn before the stream is asked
    // for, so that the page shows the figures while it connects.
    const initial = document.getElementById("initial-state");
    if (initial) {
      try {
        render(JSON.parse(initial.textContent));
      } catch (e) {
        setStatus("status-reconnecting", "bad data: " + e.message);
      }
    }
    connect();
  });
})();
