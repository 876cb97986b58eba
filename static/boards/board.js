// The live board page. The server renders the page whole (the top 100, "find me" with the players
// around and friends, and the navigation as links and forms), so it reads without scripts. This
// script takes over from the same rows: it keeps the top 10 live over the WebSocket (reconnects
// with backoff), resyncs the rest from REST after pushes and now and then, and draws the chart.
(function () {
  "use strict";
  const page = JSON.parse(document.getElementById("lb-page").textContent);
  const $ = (id) => document.getElementById(id);
  const RESYNC_MS = 1500; // after a push, rows 11-100 are fetched again at most this often
  const QUIET_RESYNC_MS = 10000; // and this often when no push comes

  function api(path, query) {
    const q = new URLSearchParams(Object.entries(query || {}).filter(([, v]) => v !== null && v !== ""));
    return fetch(`/api/v1/games/${encodeURIComponent(page.game)}${path}?${q}`).then(async (r) => ({
      ok: r.ok, status: r.status, body: await r.json().catch(() => ({})),
    }));
  }
  const boardQuery = () => ({ region: page.region, period: page.periodic ? page.period : null });

  function row(entry, extra) {
    const tr = document.createElement("tr");
    tr.dataset.player = entry.player_id;
    if (page.player && entry.player_id === page.player) tr.className = "me";
    const cells = [["rank", entry.rank], ["name", entry.display_name || entry.player_id], ["score", entry.score]];
    if (extra) cells.splice(1, 0, ["board-rank", `#${entry.board_rank}`]);
    for (const [cls, text] of cells) {
      const td = document.createElement("td"); td.className = cls; td.textContent = text; tr.appendChild(td);
      if (cls === "name" && entry.tier) {  // the tier's badge, as the server renders it (boards/pages.py)
        const badge = document.createElement("span"); badge.className = `tier tier-${entry.tier}`;
        badge.textContent = entry.tier; td.append(" ", badge);
      }
    }
    return tr;
  }

  function renderTop(entries, previous) {
    const tbody = $("board").querySelector("tbody");
    const before = new Map((previous || []).map((e) => [e.player_id, e.rank]));
    tbody.replaceChildren(...entries.map((e) => {
      const tr = row(e);
      if (previous && previous.length && before.get(e.player_id) !== e.rank) tr.classList.add("moved");
      return tr;
    }));
    $("empty").hidden = entries.length > 0;
  }

  let topEntries = page.entries || []; // the rows the server rendered
  async function loadTop() {
    const top = await api(`/boards/${page.board}/top`, { ...boardQuery(), n: 100 });
    if (!top.ok) { $("status").textContent = top.body.detail || "Unavailable"; renderTop([]); return; }
    $("status").textContent = `Season ${top.body.season}${top.body.period ? " · " + top.body.period : ""} · ${top.body.tie_rule} ranking`;
    renderTop(top.body.entries, topEntries);
    topEntries = top.body.entries;
  }

  async function loadMe() {
    const box = $("me");
    if (!page.player) { box.hidden = true; $("around-box").hidden = true; $("friends-box").hidden = true; return null; }
    const who = encodeURIComponent(page.player);
    const me = await api(`/boards/${page.board}/players/${who}`, boardQuery());
    box.hidden = false;
    if (!me.ok) {
      box.textContent = me.status === 404 ? `${page.player}: not ranked yet on this board.` : me.body.detail;
      $("around-box").hidden = true; $("friends-box").hidden = true;
      return null;
    }
    const top = Math.max(0.1, 100 - me.body.percentile).toFixed(1);
    box.textContent = `${me.body.display_name || me.body.player_id}: rank ${me.body.rank} of ${me.body.total}, score ${me.body.score} (top ${top}%)`;
    const around = await api(`/boards/${page.board}/players/${who}/around`, { ...boardQuery(), r: 5 });
    $("around-box").hidden = !around.ok;
    if (around.ok) $("around").querySelector("tbody").replaceChildren(...around.body.entries.map((e) => row(e)));
    const friends = await api(`/boards/${page.board}/players/${who}/friends`, boardQuery());
    const list = friends.ok ? friends.body.entries : [];
    $("friends-box").hidden = list.length < 2;
    $("friends").querySelector("tbody").replaceChildren(...list.map((e) => row(e, true)));
    return me.body;
  }

  let chart = null;
  async function loadChart(me) {
    const dist = await api(`/boards/${page.board}/distribution`, boardQuery());
    const el = $("chart");
    if (!dist.ok || !dist.body.buckets.length || !window.uPlot) { el.textContent = "No scores yet."; chart = null; return; }
    const xs = dist.body.buckets.map((b) => (b.min_score + b.max_score) / 2);
    const ys = dist.body.buckets.map((b) => b.players);
    const mine = xs.map((x, i) => (me && me.score >= dist.body.buckets[i].min_score && me.score <= dist.body.buckets[i].max_score ? ys[i] : null));
    el.textContent = "";
    if (chart) chart.destroy();
    chart = new uPlot({
      width: Math.min(el.clientWidth || 320, 480), height: 180,
      series: [{ label: "score" }, { label: "players", stroke: "#3451b2", fill: "rgba(52,81,178,.25)", paths: uPlot.paths.bars({ size: [0.9] }) },
               { label: "you are here", stroke: "#d9480f", fill: "rgba(217,72,15,.5)", paths: uPlot.paths.bars({ size: [0.9] }) }],
      scales: { x: { time: false } }, axes: [{ label: "score" }, { label: "players" }], legend: { show: true },
    }, [xs, ys, mine], el);
  }

  async function refresh() {
    await loadTop();
    const me = await loadMe();
    await loadChart(me);
    const ready = await fetch("/health/ready").then((r) => r.json()).catch(() => null);
    if (ready && ready.queue_lag_s > 2) {
      $("status").classList.add("warn"); $("status").textContent += " · ranks updating…";
    } else { $("status").classList.remove("warn"); }
  }

  // After a push, resync the rest of the board from REST: at most once per RESYNC_MS, and never
  // postponed by the next push (a board pushed every second still gets its rows 11-100 refreshed).
  // Without pushes, every QUIET_RESYNC_MS.
  let resyncTimer = null, resyncDue = 0;
  function scheduleResync(delay) {
    const due = Date.now() + delay;
    if (resyncTimer && resyncDue <= due) return; // one is due sooner: a push never postpones it
    clearTimeout(resyncTimer);
    resyncDue = due;
    resyncTimer = setTimeout(() => { resyncTimer = null; refresh().finally(() => scheduleResync(QUIET_RESYNC_MS)); }, delay);
  }

  // Live: the top 10 of the shown board. Reconnect with backoff; resync from REST each time.
  // A page that named its period (?period=) stays on it; one that did not follows the current
  // period: when the server moves it to the next one (midnight UTC for the day board), the page
  // loads again to show that period whole (rows, links, find me), each page at its own moment.
  const namedPeriod = new URLSearchParams(location.search).get("period") ? page.period : null;
  let socket = null, backoff = 1000, moving = false;
  function connect() {
    const proto = location.protocol === "https:" ? "wss" : "ws";
    const period = namedPeriod ? `&period=${encodeURIComponent(namedPeriod)}` : "";
    socket = new WebSocket(`${proto}://${location.host}/ws/games/${encodeURIComponent(page.game)}/boards/${page.board}/?region=${encodeURIComponent(page.region)}${period}`);
    socket.onopen = () => { backoff = 1000; $("live").classList.add("on"); };
    socket.onmessage = (ev) => {
      const msg = JSON.parse(ev.data);
      if (msg.type !== "top") return;
      if (page.periodic && msg.period !== page.period) {
        if (!namedPeriod && !moving && msg.period > page.period) {
          moving = true;
          setTimeout(() => location.reload(), Math.random() * 5000);
        }
        return;
      }
      const pushed = new Set(msg.entries.map((e) => e.player_id));
      const next = msg.entries.concat(topEntries.slice(msg.entries.length).filter((e) => !pushed.has(e.player_id)));
      renderTop(next, topEntries);
      topEntries = next;
      scheduleResync(RESYNC_MS);
    };
    socket.onclose = () => {
      $("live").classList.remove("on");
      setTimeout(() => { connect(); refresh(); }, backoff);
      backoff = Math.min(backoff * 2, 30000);
    };
  }

  $("region").onchange = () => $("region-form").submit();
  connect();
  loadMe().then(loadChart).finally(() => scheduleResync(QUIET_RESYNC_MS));
})();
