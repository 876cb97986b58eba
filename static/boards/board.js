// The board page: reads the public API and refreshes every 2 s (live push arrives with WebSockets).
(function () {
  const game = window.LB_GAME;
  const form = document.getElementById("controls");
  const params = new URLSearchParams(location.search);
  for (const name of ["board", "region", "player"]) {
    if (params.get(name)) form.elements[name].value = params.get(name);
  }
  const api = (path, q) => fetch(`/api/v1/games/${encodeURIComponent(game)}${path}?${new URLSearchParams(q)}`)
    .then(async (r) => ({ ok: r.ok, status: r.status, body: await r.json() }));

  function query() {
    const q = { region: form.elements.region.value || "global" };
    if (params.get("period")) q.period = params.get("period");
    return q;
  }

  function row(entry, me) {
    const tr = document.createElement("tr");
    if (entry.player_id === me) tr.className = "me";
    for (const [cls, text] of [["rank", entry.rank], ["name", entry.display_name || entry.player_id], ["score", entry.score]]) {
      const td = document.createElement("td");
      td.className = cls;
      td.textContent = text;
      tr.appendChild(td);
    }
    return tr;
  }

  async function refresh() {
    const board = form.elements.board.value;
    const me = form.elements.player.value.trim();
    const top = await api(`/boards/${board}/top`, { ...query(), n: 100 });
    const status = document.getElementById("status");
    if (!top.ok) { status.textContent = top.body.detail; return; }
    status.textContent = `Season ${top.body.season}${top.body.period ? ", " + top.body.period : ""} · ${top.body.tie_rule} ranking`;
    const tbody = document.querySelector("#board tbody");
    tbody.replaceChildren(...top.body.entries.map((e) => row(e, me)));
    const box = document.getElementById("me");
    if (me) {
      const mine = await api(`/boards/${board}/players/${encodeURIComponent(me)}`, query());
      box.hidden = false;
      box.textContent = mine.ok
        ? `${mine.body.display_name || me}: rank ${mine.body.rank} of ${mine.body.total}, score ${mine.body.score} (top ${(100 - mine.body.percentile).toFixed(1)}%)`
        : `${me}: ${mine.body.detail}`;
    } else {
      box.hidden = true;
    }
  }

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams({ board: form.elements.board.value, region: form.elements.region.value });
    if (form.elements.player.value) q.set("player", form.elements.player.value);
    history.replaceState(null, "", `?${q}`);
    refresh();
  });
  refresh();
  setInterval(refresh, 2000);
})();
