// A league's page for one player. The server renders it whole (the cohort with its zones, the
// distance to the promotion line, the time left), so it reads without scripts. This script keeps
// it live: the cohort over its WebSocket (reconnects with backoff) and the time left counted down,
// in the words competitions/league_pages.py and pages.py use.
(function () {
  "use strict";
  const page = JSON.parse(document.getElementById("lb-league").textContent);
  const $ = (id) => document.getElementById(id);

  function lines(entries, i) {
    const zone = entries[i].zone, after = entries[i + 1] && entries[i + 1].zone, before = i > 0 && entries[i - 1].zone;
    const out = [zone];
    if (zone === "promote" && after !== "promote") out.push("promote-line");
    if (zone === "demote" && before !== "demote") out.push("demote-line");
    if (entries[i].player_id === page.player) out.push("me");
    return out.join(" ");
  }

  function standingText(entries) {
    if (!page.cohort) return `No result this period yet: a first result puts you in a ${page.division} cohort.`;
    const mine = entries.find((e) => e.player_id === page.player);
    const promoted = entries.filter((e) => e.zone === "promote");
    if (!mine) return "Your first result is on its way to the cohort.";
    if (mine.zone === "promote") return "In the promotion zone.";
    if (!promoted.length) return "Nobody moves up from this cohort as it stands.";
    const gap = promoted[promoted.length - 1].score - mine.score + 1;
    return `${gap} point${gap !== 1 ? "s" : ""} to the promotion line.`;
  }

  function render(entries) {
    const rows = entries.map((e, i) => {
      const tr = document.createElement("tr");
      tr.dataset.player = e.player_id;
      tr.className = lines(entries, i);
      for (const [cls, text] of [["rank", e.rank], ["name", e.display_name || e.player_id], ["score", e.score], ["zone", e.zone]]) {
        const td = document.createElement("td"); td.className = cls; td.textContent = text; tr.appendChild(td);
      }
      return tr;
    });
    $("board").querySelector("tbody").replaceChildren(...rows);
    $("standing").textContent = standingText(entries);
  }

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
  function tick() {
    if (!page.starts_at) return;
    const now = Date.now(), start = Date.parse(page.starts_at), end = Date.parse(page.ends_at);
    const closes = Date.parse(page.closes_at);
    let text;
    if (page.status === "final") text = "Final";
    else if (now < start) text = `Starts in ${duration((start - now) / 1000)}`;
    else if (now < end) text = `${duration((end - now) / 1000)} left`;
    else if (now < closes) text = `Ended; results played in time still count for ${duration((closes - now) / 1000)}`;
    else text = "Ended; final standings soon";
    $("time-left").textContent = text;
  }

  let backoff = 1000;
  function connect() {
    const proto = location.protocol === "https:" ? "wss" : "ws";
    const path = `/ws/games/${encodeURIComponent(page.game)}/leagues/${encodeURIComponent(page.league)}/cohorts/${encodeURIComponent(page.cohort)}/`;
    const socket = new WebSocket(`${proto}://${location.host}${path}`);
    socket.onopen = () => { backoff = 1000; $("live").classList.add("on"); };
    socket.onmessage = (ev) => {
      const msg = JSON.parse(ev.data);
      if (msg.type !== "cohort" || msg.id !== page.cohort) return;
      page.status = msg.period.status;
      const badge = $("period-status");
      badge.textContent = msg.period.status; badge.className = `badge ${msg.period.status}`;
      render(msg.entries);
      tick();
    };
    socket.onclose = () => {
      $("live").classList.remove("on");
      setTimeout(connect, backoff);
      backoff = Math.min(backoff * 2, 30000);
    };
  }

  if (page.cohort) connect();
  setInterval(tick, 1000);
})();
