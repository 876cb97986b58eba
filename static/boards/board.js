// The live board page: REST for snapshots, a WebSocket for top-10 pushes (reconnects with backoff
// and resyncs from REST), "find me" with the players around, friends, and the score distribution.
(function () {
  "use strict";
  const game = window.LB_GAME;
  const $ = (id) => document.getElementById(id);
  const params = new URLSearchParams(location.search);
  const state = {
    board: params.get("board") || "all",
    region: params.get("region") || "global",
    period: params.get("period") || null,
    player: params.get("player") || "",
    boards: ["all", "daily", "weekly", "monthly", "best"],
    labels: { all: "Season", daily: "Today", weekly: "This week", monthly: "This month", best: "Best match" },
    current: null, // the period the server says is current, for the live feed
  };
  const PERIODIC = new Set(["daily", "weekly", "monthly"]);

  function api(path, query) {
    const q = new URLSearchParams(Object.entries(query || {}).filter(([, v]) => v !== null && v !== ""));
    return fetch(`/api/v1/games/${encodeURIComponent(game)}${path}?${q}`).then(async (r) => ({
      ok: r.ok, status: r.status, body: await r.json().catch(() => ({})),
    }));
  }
  function boardQuery() {
    return { region: state.region, period: PERIODIC.has(state.board) ? state.period : null };
  }

  // Period arithmetic (UTC): day, ISO week, month.
  function shiftPeriod(period, board, step) {
    if (board === "daily") {
      const d = new Date(period + "T00:00:00Z"); d.setUTCDate(d.getUTCDate() + step);
      return d.toISOString().slice(0, 10);
    }
    if (board === "monthly") {
      const [y, m] = period.split("-").map(Number); const d = new Date(Date.UTC(y, m - 1 + step, 1));
      return d.toISOString().slice(0, 7);
    }
    const [y, w] = period.split("-W").map(Number);
    const jan4 = new Date(Date.UTC(y, 0, 4)); const monday = new Date(jan4);
    monday.setUTCDate(jan4.getUTCDate() - ((jan4.getUTCDay() + 6) % 7) + (w - 1 + step) * 7);
    const thursday = new Date(monday); thursday.setUTCDate(monday.getUTCDate() + 3);
    const year = thursday.getUTCFullYear(); const firstJan4 = new Date(Date.UTC(year, 0, 4));
    const week = 1 + Math.round((thursday - firstJan4) / 86400000 / 7 - ((firstJan4.getUTCDay() + 6) % 7) / 7 + 3 / 7);
    return `${year}-W${String(Math.max(1, week)).padStart(2, "0")}`;
  }

  function syncUrl() {
    const q = new URLSearchParams({ board: state.board, region: state.region });
    if (state.period && PERIODIC.has(state.board)) q.set("period", state.period);
    if (state.player) q.set("player", state.player);
    history.replaceState(null, "", `?${q}`);
  }

  function row(entry, extra) {
    const tr = document.createElement("tr");
    tr.dataset.player = entry.player_id;
    if (state.player && entry.player_id === state.player) tr.className = "me";
    const cells = [["rank", entry.rank], ["name", entry.display_name || entry.player_id], ["score", entry.score]];
    if (extra) cells.splice(1, 0, ["board-rank", `#${entry.board_rank}`]);
    for (const [cls, text] of cells) {
      const td = document.createElement("td"); td.className = cls; td.textContent = text; tr.appendChild(td);
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

  let topEntries = [];
  async function loadTop() {
    const top = await api(`/boards/${state.board}/top`, { ...boardQuery(), n: 100 });
    if (!top.ok) { $("status").textContent = top.body.detail || "Unavailable"; renderTop([]); return; }
    if (!state.period && top.body.period) state.period = top.body.period;
    if (top.body.period && !state.current) state.current = top.body.period;
    $("status").textContent = `Season ${top.body.season}${top.body.period ? " · " + top.body.period : ""} · ${top.body.tie_rule} ranking`;
    renderTop(top.body.entries, topEntries);
    topEntries = top.body.entries;
    $("period-label").textContent = top.body.period || "";
  }

  async function loadMe() {
    const box = $("me");
    if (!state.player) { box.hidden = true; $("around-box").hidden = true; $("friends-box").hidden = true; return null; }
    const me = await api(`/boards/${state.board}/players/${encodeURIComponent(state.player)}`, boardQuery());
    box.hidden = false;
    if (!me.ok) {
      box.textContent = me.status === 404 ? `${state.player}: not ranked yet on this board.` : me.body.detail;
      $("around-box").hidden = true; $("friends-box").hidden = true;
      return null;
    }
    const top = Math.max(0.1, 100 - me.body.percentile).toFixed(1);
    box.textContent = `${me.body.display_name || me.body.player_id}: rank ${me.body.rank} of ${me.body.total}, score ${me.body.score} (top ${top}%)`;
    const around = await api(`/boards/${state.board}/players/${encodeURIComponent(state.player)}/around`, { ...boardQuery(), r: 5 });
    $("around-box").hidden = !around.ok;
    if (around.ok) $("around").querySelector("tbody").replaceChildren(...around.body.entries.map((e) => row(e)));
    const friends = await api(`/boards/${state.board}/players/${encodeURIComponent(state.player)}/friends`, boardQuery());
    const list = friends.ok ? friends.body.entries : [];
    $("friends-box").hidden = list.length < 2;
    $("friends").querySelector("tbody").replaceChildren(...list.map((e) => row(e, true)));
    return me.body;
  }

  let chart = null;
  async function loadChart(me) {
    const dist = await api(`/boards/${state.board}/distribution`, boardQuery());
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

  // Live: the top 10 of the current period. Reconnect with backoff; resync from REST each time.
  let socket = null, backoff = 1000, timer = null;
  function connect() {
    if (socket) { socket.onclose = null; socket.close(); }
    const proto = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(`${proto}://${location.host}/ws/games/${encodeURIComponent(game)}/boards/${state.board}/?region=${encodeURIComponent(state.region)}`);
    socket.onopen = () => { backoff = 1000; $("live").classList.add("on"); };
    socket.onmessage = (ev) => {
      const msg = JSON.parse(ev.data);
      if (msg.type !== "top" || (PERIODIC.has(state.board) && msg.period !== state.period)) return;
      const pushed = new Set(msg.entries.map((e) => e.player_id));
      const next = msg.entries.concat(topEntries.slice(msg.entries.length).filter((e) => !pushed.has(e.player_id)));
      renderTop(next, topEntries);
      topEntries = next;
      clearTimeout(timer); timer = setTimeout(refresh, 1500); // then resync the rest from REST
    };
    socket.onclose = () => {
      $("live").classList.remove("on");
      setTimeout(() => { connect(); refresh(); }, backoff);
      backoff = Math.min(backoff * 2, 30000);
    };
  }

  function renderControls() {
    const tabs = $("tabs");
    tabs.replaceChildren(...state.boards.map((b) => {
      const btn = document.createElement("button");
      btn.type = "button"; btn.role = "tab"; btn.textContent = state.labels[b] || b; btn.dataset.board = b;
      btn.setAttribute("aria-selected", String(b === state.board));
      btn.onclick = () => { state.board = b; state.period = null; state.current = null; topEntries = []; renderControls(); syncUrl(); refresh(); connect(); };
      return btn;
    }));
    $("period-nav").hidden = !PERIODIC.has(state.board);
  }

  async function start() {
    const info = await api("", {});
    if (info.ok) {
      state.boards = info.body.boards;
      $("region").replaceChildren(...info.body.regions.map((r) => new Option(r, r, false, r === state.region)));
    }
    $("player").value = state.player;
    $("region").onchange = () => { state.region = $("region").value; topEntries = []; syncUrl(); refresh(); connect(); };
    $("prev").onclick = () => { state.period = shiftPeriod(state.period, state.board, -1); syncUrl(); topEntries = []; refresh(); };
    $("next").onclick = () => { state.period = shiftPeriod(state.period, state.board, 1); syncUrl(); topEntries = []; refresh(); };
    $("find").onsubmit = (ev) => { ev.preventDefault(); state.player = $("player").value.trim(); syncUrl(); refresh(); };
    renderControls();
    await refresh();
    connect();
  }
  start();
})();
