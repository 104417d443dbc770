// ptysup serve: the runs table, polled, and one run's details with its terminal.
// Everything from a run (task text, decisions) is untrusted: it goes in by textContent only.
"use strict";

(function () {
  const POLL_MS = 2000;
  const tbody = document.querySelector("#runs tbody");
  const status = document.getElementById("status");
  let selected = null; // run id shown in the details
  let player = null; // { id, live, instance }

  function el(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }

  function stateClass(state) {
    return "state state-" + String(state).replace(/[^a-z_]/gi, "");
  }

  function elapsed(seconds) {
    const s = Math.round(Number(seconds) || 0);
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
    if (h) return h + "h" + String(m).padStart(2, "0") + "m";
    if (m) return m + "m" + String(r).padStart(2, "0") + "s";
    return r + "s";
  }

  function step(row) {
    return row.step ? row.step_index + "/" + row.steps_of + " " + row.step : "-";
  }

  function iterations(row) {
    return row.max_iter ? row.iterations + "/" + row.max_iter : String(row.iterations);
  }

  function outcome(row) {
    if (!row.outcome) return "-";
    return row.reason ? row.outcome + ": " + String(row.reason).split(/\s+/).join(" ") : row.outcome;
  }

  function cost(row) {
    return "$" + Number(row.cost_usd || 0).toFixed(4);
  }

  async function getJSON(url) {
    const response = await fetch(url, { credentials: "same-origin", cache: "no-store" });
    if (!response.ok) throw new Error(url + ": HTTP " + response.status);
    return response.json();
  }

  function renderRuns(rows) {
    const fresh = document.createDocumentFragment();
    for (const row of rows) {
      const tr = el("tr");
      tr.dataset.runId = row.run_id;
      if (row.run_id === selected) tr.classList.add("selected");
      tr.append(
        el("td", row.run_id, "run"),
        el("td", row.state, stateClass(row.state)),
        el("td", outcome(row), "outcome"),
        el("td", String(row.task || "").split(/\s+/).join(" "), "task"),
        el("td", step(row), "step"),
        el("td", iterations(row), "num iterations"),
        el("td", String(row.parts || 1), "num parts"),
        el("td", cost(row), "num cost"),
        el("td", elapsed(row.elapsed_s), "num elapsed"),
      );
      tr.title = String(row.task || "");
      tr.addEventListener("click", () => select(row.run_id));
      fresh.append(tr);
    }
    tbody.replaceChildren(fresh);
    document.getElementById("empty").hidden = rows.length > 0;
  }

  function renderBatches(rows) {
    const table = document.getElementById("batches");
    const fresh = document.createDocumentFragment();
    for (const row of rows) {
      const tr = el("tr");
      tr.dataset.batch = row.batch;
      tr.append(
        el("td", row.batch, "batch"),
        el("td", row.state, stateClass(row.state)),
        el("td", row.done, "num done"),
        el("td", row.running, "num running"),
        el("td", row.queued, "num queued"),
        el("td", row.failed, "num failed"),
        el("td", row.tasks_file, "file"),
      );
      fresh.append(tr);
    }
    table.querySelector("tbody").replaceChildren(fresh);
    table.hidden = rows.length === 0;
  }

  function renderDecisions(decisions) {
    const list = document.getElementById("decisions");
    list.replaceChildren(
      ...decisions.map((d) => {
        const li = el("li");
        // A [COMPLETE] that --verify failed was no completion: the run went on.
        const action = d.rejected ? d.action + " (rejected by verify)" : d.action;
        const kind = "action action-" + String(d.action).replace(/[^a-z]/gi, "");
        li.append(
          el("span", action, d.rejected ? kind + " rejected" : kind),
          el("span", d.content, "content"),
          el("span", "#" + d.iteration + (d.cost_usd != null ? " · $" + Number(d.cost_usd).toFixed(4) : ""), "meta"),
        );
        return li;
      }),
    );
    document.getElementById("no-decisions").hidden = decisions.length > 0;
  }

  function showPlayer(run) {
    const live = Boolean(run.live);
    if (player && player.id === run.run_id && (player.live === live || player.live)) {
      return; // a live view keeps streaming to its end; it says when the stream ended
    }
    const box = document.getElementById("player");
    if (player) player.instance.dispose();
    box.replaceChildren();
    player = null;
    const base = "/api/runs/" + encodeURIComponent(run.run_id);
    const noRecording = document.getElementById("no-recording");
    noRecording.hidden = true;
    let instance;
    if (live && run.recorded) {
      instance = AsciinemaPlayer.create(
        { driver: "eventsource", url: base + "/live", bufferTime: 0 },
        box,
        { autoPlay: true, fit: "width", terminalFontSize: "small" },
      );
    } else if (run.has_recording) {
      // The final screen at once (the poster; it shows events before its time, so a second
      // past the last one); play replays the run from its start.
      const end = (run.cast_duration_s || 0) + 1;
      instance = AsciinemaPlayer.create(base + "/cast", box, {
        poster: "npt:" + end,
        fit: "width",
        idleTimeLimit: 2,
        terminalFontSize: "small",
      });
    } else {
      noRecording.hidden = false;
      return;
    }
    player = { id: run.run_id, live: live, instance: instance };
    box.dataset.mode = live ? "live" : "replay";
  }

  async function showDetail() {
    if (selected === null) return;
    const run = await getJSON("/api/runs/" + encodeURIComponent(selected));
    if (run.run_id !== selected) return;
    document.getElementById("detail").hidden = false;
    document.getElementById("detail-id").textContent = run.run_id;
    const state = document.getElementById("detail-state");
    state.textContent = run.state;
    state.className = stateClass(run.state);
    document.getElementById("detail-task").textContent = run.task || "";
    const ended = document.getElementById("detail-outcome");
    ended.hidden = !run.outcome;
    ended.textContent = run.outcome ? "outcome: " + outcome(run) : "";
    const parts = Number(run.parts || 1);
    if (parts > 1) ended.textContent += " · resumed: " + parts + " parts";
    if (parts > 1) ended.hidden = false;
    const steps = document.getElementById("detail-steps");
    const done = run.steps_done || [];
    steps.hidden = !run.step && done.length === 0;
    steps.textContent = "plan steps done: " + (done.length ? done.join(", ") : "none")
      + (run.step && run.outcome === null ? " · now: " + step(run) : "");
    // Lines of its event log ptysup could not read: what the page shows may miss events.
    const skipped = document.getElementById("detail-skipped");
    const count = run.unreadable_lines || 0;
    skipped.hidden = count === 0;
    skipped.textContent = count === 1 ? "1 unreadable line in its event log skipped"
      : count + " unreadable lines in its event log skipped";
    renderDecisions(run.decisions || []);
    showPlayer(run);
  }

  function select(id) {
    selected = id;
    for (const tr of tbody.children) tr.classList.toggle("selected", tr.dataset.runId === id);
    history.replaceState(null, "", "#" + encodeURIComponent(id));
    refreshDetail();
  }

  function refreshDetail() {
    showDetail().catch((err) => setStatus("cannot load the run: " + err.message, true));
  }

  function setStatus(text, error) {
    status.textContent = text;
    status.classList.toggle("error", Boolean(error));
  }

  async function poll() {
    try {
      const rows = await getJSON("/api/runs");
      renderRuns(rows);
      renderBatches(await getJSON("/api/batches"));
      setStatus("updated " + new Date().toLocaleTimeString(), false);
      if (selected !== null) await showDetail();
    } catch (err) {
      setStatus("cannot reach ptysup serve (" + err.message + ")", true);
    }
    setTimeout(poll, POLL_MS);
  }

  if (location.hash.length > 1) selected = decodeURIComponent(location.hash.slice(1));
  poll();
})();
