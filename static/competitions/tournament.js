// A tournament's page. The server renders it whole (the period's top 100, its status and the time
// left), so it reads without scripts. This script keeps it live: the top 10 over the WebSocket
// (reconnects with backoff), rows 11-100 resynced from REST after pushes and now and then, and
// the time left counted down (in the words competitions/pages.py uses).
(function () {
  "use strict";
  const page = JSON.parse(document.getElementById("lb-tournament").textContent);
  const $ = (id) => document.getElementById(id);
  const RESYNC_MS = 1500;
  const QUIET_RESYNC_MS = 10000;
  const base = `/api/v1/games/${encodeURIComponent(page.game)}/tournaments/${encodeURIComponent(page.tournament)}`;

  function rewardText(reward) {
    if (reward === null || reward === undefined) return "";
    const flat = typeof reward === "object" && !Array.isArray(reward) &&
      Object.values(reward).every((v) => v === null || typeof v !== "object");
    return flat ? Object.entries(reward).map(([k, v]) => `${k} ${v}`).join(", ") : JSON.stringify(reward);
  }

  function row(entry) {
    const tr = document.createElement("tr");
    tr.dataset.player = entry.player_id;
    const cells = [["rank", entry.rank], ["name", entry.display_name || entry.player_id], ["score", entry.score],
                   ["attempts", entry.attempts], ["reward", rewardText(entry.reward)]];
    for (const [cls, text] of cells) {
      const td = document.createElement("td"); td.className = cls; td.textContent = text; tr.appendChild(td);
    }
    return tr;
  }

  let entries = page.entries || [];
  function render(next) {
    const before = new Map(entries.map((e) => [e.player_id, e.rank]));
    $("board").querySelector("tbody").replaceChildren(...next.map((e) => {
      const tr = row(e);
      if (entries.length && before.get(e.player_id) !== e.rank) tr.classList.add("moved");
      return tr;
    }));
    $("empty").hidden = next.length > 0;
    entries = next;
  }

  function periodShown(period) {
    page.status = period.status; page.starts_at = period.starts_at; page.ends_at = period.ends_at;
    const badge = $("period-status");
    badge.textContent = period.status; badge.className = `badge ${period.status}`;
    tick();
  }

  async function resync() {
    const q = new URLSearchParams({ n: 100, period: page.period });
    const r = await fetch(`${base}/top?${q}`).catch(() => null);
    if (!r || !r.ok) return;
    const body = await r.json();
    periodShown(body.period);
    render(body.entries);
  }

  // The time left, in the server's words (pages.py time_left and duration_text).
  function duration(seconds) {
    const left = Math.max(0, Math.floor(seconds));
    const d = Math.floor(left / 86400), h = Math.floor((left % 86400) / 3600);
    const m = Math.floor((left % 3600) / 60), s = left % 60;
    const two = (n) => String(n).padStart(2, "0");
    if (d) return `${d} d ${h} h`;
    if (h) return `${h} h ${two(m)} min`;
    if (m) return `${m} min ${two(s)} s`;
    return `${s} s`;
  }
  const graceMs = Date.parse(page.closes_at) - Date.parse(page.ends_at);
  function tick() {
    const now = Date.now(), start = Date.parse(page.starts_at), end = Date.parse(page.ends_at);
    const closes = end + graceMs;
    let text;
    if (page.status === "final") text = "Final";
    else if (now < start) text = `Starts in ${duration((start - now) / 1000)}`;
    else if (now < end) text = `${duration((end - now) / 1000)} left`;
    else if (now < closes) text = `Ended; results played in time still count for ${duration((closes - now) / 1000)}`;
    else text = "Ended; final standings soon";
    $("time-left").textContent = text;
  }

  let resyncTimer = null, resyncDue = 0;
  function scheduleResync(delay) {
    const due = Date.now() + delay;
    if (resyncTimer && resyncDue <= due) return; // one is due sooner: a push never postpones it
    clearTimeout(resyncTimer);
    resyncDue = due;
    resyncTimer = setTimeout(() => { resyncTimer = null; resync().finally(() => scheduleResync(QUIET_RESYNC_MS)); }, delay);
  }

  // Live: the top 10 of the period shown. A page that named its period stays on it; one that did
  // not follows the current period, and loads again when the server moves it to the next one.
  let backoff = 1000, moving = false;
  function connect() {
    const proto = location.protocol === "https:" ? "wss" : "ws";
    const period = page.named ? `?period=${page.period}` : "";
    const socket = new WebSocket(`${proto}://${location.host}/ws/games/${encodeURIComponent(page.game)}/tournaments/${encodeURIComponent(page.tournament)}/${period}`);
    socket.onopen = () => { backoff = 1000; $("live").classList.add("on"); };
    socket.onmessage = (ev) => {
      const msg = JSON.parse(ev.data);
      if (msg.type !== "top") return;
      if (msg.period.index !== page.period) {
        if (!page.named && !moving && msg.period.index > page.period) {
          moving = true;
          setTimeout(() => location.reload(), Math.random() * 5000);
        }
        return;
      }
      periodShown(msg.period);
      const pushed = new Set(msg.entries.map((e) => e.player_id));
      render(msg.entries.concat(entries.slice(msg.entries.length).filter((e) => !pushed.has(e.player_id))));
      scheduleResync(RESYNC_MS);
    };
    socket.onclose = () => {
      $("live").classList.remove("on");
      setTimeout(() => { connect(); resync(); }, backoff);
      backoff = Math.min(backoff * 2, 30000);
    };
  }

  connect();
  setInterval(tick, 1000);
  scheduleResync(QUIET_RESYNC_MS);
})();
