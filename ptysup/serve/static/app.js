// ptysup serve: the runs (polled), filtered, grouped by batch and shown a page at a time,
// and one run's details beside them with its terminal.
// Everything from a run (task text, decisions, damage) is untrusted: it goes in by
// textContent only.
"use strict";

(function () {
  const POLL_MS = 2000;
  const PAGE = 50; // rows shown at first, and added by "show more"
  const tbody = document.querySelector("#runs tbody");
  const status = document.getElementById("status");
  const detail = document.getElementById("detail");
  const filterText = document.getElementById("filter-text");
  const filterTone = document.getElementById("filter-tone");
  const more = document.getElementById("more");
  let rows = []; // every run's row, newest first
  let batches = []; // every batch's row
  let member = new Map(); // run id → { batch, task } for a batch's runs
  let limit = PAGE;
  const collapsed = new Set(); // batches whose runs are folded away
  let selected = null; // run id shown in the details
  let player = null; // { id, live, instance }
  let control = false; // this visitor opened the control URL: a live run can be steered

  function el(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }

  // A run's state as `ptysup runs` words it (an ended run by its outcome), coloured by
  // its tone (the server's labels.py).
  function paintState(node, row) {
    node.textContent = String(row.label || row.state);
    node.className = "state tone-" + String(row.tone || "").replace(/[^a-z]/gi, "");
    return node;
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
    return row.reason ? row.outcome + ": " + oneLine(row.reason) : row.outcome;
  }

  function oneLine(text) {
    return String(text || "").split(/\s+/).join(" ").trim();
  }

  function cost(row) {
    return "$" + Number(row.cost_usd || 0).toFixed(4);
  }

  async function getJSON(url) {
    const response = await fetch(url, { credentials: "same-origin", cache: "no-store" });
    if (!response.ok) throw new Error(url + ": HTTP " + response.status);
    return response.json();
  }

  // -- the list: filtered, grouped by batch, a page at a time ---------------------------
  function matches(row) {
    const tone = filterTone.value;
    if (tone && row.tone !== tone) return false;
    const words = filterText.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    if (!words.length) return true;
    const m = member.get(row.run_id);
    const text = [row.run_id, row.label, row.state, row.outcome, row.reason, row.task,
      m ? m.batch : "", m ? m.task : "", (row.damage || []).join(" ")].join(" ").toLowerCase();
    return words.every((word) => text.includes(word));
  }

  // The list's entries, newest first: a run on its own, or a batch with its runs under
  // it (where its newest run stands). A batch none of whose runs is listed yet comes first.
  function entries(matching) {
    const out = [];
    const byBatch = new Map();
    const filtering = Boolean(filterTone.value || filterText.value.trim());
    const known = new Set(rows.map((r) => r.run_id));
    for (const b of batches) {
      const group = { batch: b, runs: [] };
      byBatch.set(b.batch, group);
      const listed = (b.tasks || []).some((t) => known.has(t.run_id));
      if (!listed && !filtering) out.push(group);
    }
    const placed = new Set();
    for (const row of matching) {
      const m = member.get(row.run_id);
      const group = m && byBatch.get(m.batch);
      if (!group) {
        out.push({ run: row });
        continue;
      }
      group.runs.push(row);
      if (!placed.has(group)) {
        placed.add(group);
        out.push(group);
      }
    }
    return out;
  }

  function render() {
    const matching = rows.filter(matches);
    const fresh = document.createDocumentFragment();
    let shown = 0;
    for (const entry of entries(matching)) {
      if (shown >= limit) break;
      if (entry.run) {
        fresh.append(runRow(entry.run));
        shown += 1;
        continue;
      }
      fresh.append(batchRow(entry.batch, entry.runs.length));
      if (collapsed.has(entry.batch.batch)) continue;
      for (const row of entry.runs) {
        if (shown >= limit) break;
        fresh.append(runRow(row));
        shown += 1;
      }
    }
    tbody.replaceChildren(fresh);
    const folded = matching.filter((r) => member.has(r.run_id) && collapsed.has(member.get(r.run_id).batch)).length;
    const left = matching.length - folded - shown;
    more.hidden = left <= 0;
    more.textContent = "show " + Math.min(left, PAGE) + " more (" + left + " not shown)";
    document.getElementById("count").textContent = rows.length
      ? "showing " + shown + " of " + (matching.length === rows.length ? rows.length + " runs" : matching.length + " matching runs (" + rows.length + " in all)")
      : "";
    document.getElementById("empty").hidden = rows.length > 0 || batches.length > 0;
    document.getElementById("no-match").hidden = rows.length === 0 || matching.length > 0;
  }

  function runRow(row) {
    const tr = el("tr");
    tr.dataset.runId = row.run_id;
    tr.tabIndex = 0;
    const m = member.get(row.run_id);
    if (m) tr.classList.add("in-batch");
    if (row.run_id === selected) tr.classList.add("selected");
    const task = el("td", null, "task");
    if (m) task.append(el("span", m.task, "task-id"), " ");
    task.append(oneLine(row.task));
    tr.append(
      el("td", row.run_id, "run"),
      paintState(el("td"), row),
      el("td", outcome(row), "outcome"),
      task,
      el("td", step(row), "step"),
      el("td", iterations(row), "num iterations"),
      el("td", String(row.parts || 1), "num parts"),
      el("td", cost(row), "num cost"),
      el("td", elapsed(row.elapsed_s), "num elapsed"),
    );
    tr.title = (row.damage && row.damage.length ? row.damage.join("\n") + "\n\n" : "") + String(row.task || "");
    tr.addEventListener("click", () => select(row.run_id));
    tr.addEventListener("keydown", (e) => { if (e.key === "Enter") select(row.run_id); });
    return tr;
  }

  function batchRow(b, listed) {
    const tr = el("tr", null, "batch");
    tr.dataset.batch = b.batch;
    tr.tabIndex = 0;
    const folded = collapsed.has(b.batch);
    tr.setAttribute("aria-expanded", String(!folded));
    const counts = ["done", "running", "queued", "interrupted", "failed"].map((k) => b[k] + " " + k).join(" · ");
    const state = el("span", b.state, "state tone-" + (b.state === "running" ? "live" : b.state === "ended" ? "ok" : "failed"));
    const damaged = b.damage && b.damage.length;
    const cell = el("td", null, "batch-cell");
    cell.colSpan = 9; // one cell: the list's columns may be narrowed beside the details
    cell.append(
      el("span", (folded ? "▸ " : "▾ ") + "batch " + b.batch, "batch-name"), " ", state, " ",
      el("span", counts + (folded ? " · " + listed + " runs folded" : ""), "batch-counts"), " ",
      el("span", damaged ? b.damage.join("; ") : b.tasks_file, damaged ? "file damage" : "file"),
    );
    tr.append(cell);
    const toggle = () => {
      if (collapsed.has(b.batch)) collapsed.delete(b.batch); else collapsed.add(b.batch);
      render();
    };
    tr.addEventListener("click", toggle);
    tr.addEventListener("keydown", (e) => { if (e.key === "Enter") toggle(); });
    return tr;
  }

  function learnBatches(list) {
    batches = list;
    member = new Map();
    for (const b of list) {
      for (const t of b.tasks || []) {
        if (t.run_id) member.set(t.run_id, { batch: b.batch, task: t.id });
      }
    }
  }

  // -- one run's details ------------------------------------------------------------------
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

  function disposePlayer() {
    if (player) player.instance.dispose();
    document.getElementById("player").replaceChildren();
    player = null;
  }

  function showPlayer(run) {
    const live = Boolean(run.live);
    if (player && player.id === run.run_id && (player.live === live || player.live)) {
      return; // a live view keeps streaming to its end; it says when the stream ended
    }
    disposePlayer();
    const box = document.getElementById("player");
    const base = "/api/runs/" + encodeURIComponent(run.run_id);
    const noRecording = document.getElementById("no-recording");
    noRecording.hidden = true;
    let instance;
    if (live && run.showable) {
      instance = AsciinemaPlayer.create(
        { driver: "eventsource", url: base + "/live", bufferTime: 0 },
        box,
        { autoPlay: true, fit: "width", terminalFontSize: "small" },
      );
    } else if (run.showable) {
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
      noRecording.textContent = !run.recorded ? "This run has no recording."
        : run.recording_damaged ? "Its recording cannot be shown: see the damage above."
          : "Its recording does not exist (yet).";
      noRecording.hidden = false;
      return;
    }
    player = { id: run.run_id, live: live, instance: instance };
    box.dataset.mode = live ? "live" : "replay";
  }

  function showBatch(run) {
    const node = document.getElementById("detail-batch");
    const m = member.get(run.run_id);
    node.hidden = !m;
    node.textContent = m ? "task " + m.task + " of batch " + m.batch : "";
  }

  function showOutcome(run) {
    const ended = document.getElementById("detail-outcome");
    ended.textContent = run.outcome ? "outcome: " + outcome(run) : "";
    const parts = Number(run.parts || 1);
    if (parts > 1) ended.textContent += (run.outcome ? " · " : "") + "resumed: " + parts + " parts";
    ended.hidden = !ended.textContent;
    const steps = document.getElementById("detail-steps");
    const done = run.steps_done || [];
    steps.hidden = !run.step && done.length === 0;
    steps.textContent = "plan steps done: " + (done.length ? done.join(", ") : "none")
      + (run.step && run.outcome === null ? " · now: " + step(run) : "");
  }

  // What is wrong with the run's files (ptysup could not read all of it): what the page
  // shows may be short of what happened.
  function showDamage(run) {
    const box = document.getElementById("detail-damage");
    const damage = run.damage || [];
    box.hidden = damage.length === 0;
    box.querySelector("ul").replaceChildren(...damage.map((line) => el("li", line)));
  }

  function showSteer(run) {
    document.getElementById("detail-steer").hidden = !(control && run.live);
    document.getElementById("steer-link").href = "/control#" + encodeURIComponent(run.run_id);
  }

  async function showDetail(reveal) {
    if (selected === null) return;
    const run = await getJSON("/api/runs/" + encodeURIComponent(selected));
    if (run.run_id !== selected) return;
    detail.hidden = false;
    document.getElementById("detail-id").textContent = run.run_id;
    paintState(document.getElementById("detail-state"), run);
    document.getElementById("detail-task").textContent = run.task || "";
    showBatch(run);
    showOutcome(run);
    showDamage(run);
    showSteer(run);
    renderDecisions(run.decisions || []);
    showPlayer(run);
    if (reveal) revealDetail();
  }

  // The details where the person looks: beside the list on a wide window (it stays in
  // view as the list scrolls), else below it, scrolled to.
  function revealDetail() {
    const box = detail.getBoundingClientRect();
    if (box.top < 0 || box.top > window.innerHeight / 2) {
      detail.scrollIntoView({ block: "start" });
    }
  }

  function select(id) {
    selected = id;
    for (const tr of tbody.querySelectorAll("tr[data-run-id]")) {
      tr.classList.toggle("selected", tr.dataset.runId === id);
    }
    history.replaceState(null, "", "#" + encodeURIComponent(id));
    showDetail(true).catch((err) => setStatus("cannot load the run: " + err.message, true));
  }

  function deselect() {
    selected = null;
    detail.hidden = true;
    disposePlayer();
    history.replaceState(null, "", location.pathname);
    for (const tr of tbody.querySelectorAll("tr.selected")) tr.classList.remove("selected");
  }

  function setStatus(text, error) {
    status.textContent = text;
    status.classList.toggle("error", Boolean(error));
  }

  let first = true; // the first poll shows a run the address names, scrolled to
  async function poll() {
    try {
      const [runs, batchRows] = await Promise.all([getJSON("/api/runs"), getJSON("/api/batches")]);
      rows = runs;
      learnBatches(batchRows);
      render();
      setStatus("updated " + new Date().toLocaleTimeString(), false);
      if (selected !== null) await showDetail(first);
      first = false;
    } catch (err) {
      setStatus("cannot reach ptysup serve (" + err.message + ")", true);
    }
    setTimeout(poll, POLL_MS);
  }

  function refilter() {
    limit = PAGE;
    render();
  }

  filterText.addEventListener("input", refilter);
  filterTone.addEventListener("change", refilter);
  more.addEventListener("click", () => { limit += PAGE; render(); });
  document.getElementById("detail-close").addEventListener("click", deselect);
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && selected !== null && document.activeElement !== filterText) deselect();
  });
  if (location.hash.length > 1) selected = decodeURIComponent(location.hash.slice(1));
  getJSON("/api/session")
    .then((session) => { control = Boolean(session.control); })
    .catch(() => { control = false; })
    .finally(poll);
})();
