// ptysup serve --control: one live run's terminal (xterm.js, fed from the run's attach
// socket), what it waits on, a message box, its budgets and stop. Every action is a POST
// with the header X-Ptysup-Control (a form on another site cannot send it) and the
// control cookie; the run logs it as the person's act.
// Everything from a run (task, screen text, the dialog, options) goes in by textContent.
"use strict";

(function () {
  const POLL_MS = 2000;
  // xterm.js draws its theme and cell sizes with <style> elements it makes; this page's
  // policy lets in only those that carry this answer's nonce, so each <style> made gets it.
  const nonce = document.querySelector('meta[name="ptysup-style-nonce"]').content;
  const make = Document.prototype.createElement;
  Document.prototype.createElement = function (tag, options) {
    const node = make.call(this, tag, options);
    if (String(tag).toLowerCase() === "style") node.nonce = nonce;
    return node;
  };
  // ...and the colours it has no class for (24-bit ones, Codex CLI's) it sets as a style
  // attribute, which the policy blocks as any inline style: set through the CSSOM instead,
  // which draws the same and which the policy does not govern.
  const setAttribute = Element.prototype.setAttribute;
  Element.prototype.setAttribute = function (name, value) {
    if (String(name).toLowerCase() === "style" && this.style) {
      this.style.cssText = String(value);
      return;
    }
    setAttribute.call(this, name, value);
  };

  const runId = decodeURIComponent(location.hash.slice(1));
  const base = "/api/runs/" + encodeURIComponent(runId);
  const $ = (id) => document.getElementById(id);
  const status = $("status");
  const result = $("result");
  let size = { cols: 80, rows: 24 };
  let shownWaiting = ""; // what the waiting box shows now, so a poll does not redraw it
  let live = true;
  let term = null;

  function el(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }

  function duration(seconds) {
    if (seconds === null || seconds === undefined) return "no limit";
    const s = Math.round(Number(seconds) || 0);
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
    if (h) return h + "h" + String(m).padStart(2, "0") + "m";
    if (m) return m + "m" + String(r).padStart(2, "0") + "s";
    return r + "s";
  }

  function setStatus(text, error) {
    status.textContent = text;
    status.classList.toggle("error", Boolean(error));
  }

  function say(text, error) {
    result.textContent = text;
    result.classList.toggle("error", Boolean(error));
  }

  async function getJSON(url) {
    const response = await fetch(url, { credentials: "same-origin", cache: "no-store" });
    if (!response.ok) throw new Error(url + ": HTTP " + response.status);
    return response.json();
  }

  async function post(action, body) {
    const response = await fetch(base + "/" + action, {
      method: "POST",
      credentials: "same-origin",
      cache: "no-store",
      headers: { "Content-Type": "application/json", "X-Ptysup-Control": "1" },
      body: JSON.stringify(body),
    });
    let answer = {};
    try {
      answer = await response.json();
    } catch (err) {
      answer = { error: "HTTP " + response.status };
    }
    if (!response.ok) throw new Error(answer.error || "HTTP " + response.status);
    if (answer.refused) throw new Error(answer.refused); // the run's no, in its words
    return answer.ok;
  }

  // One action at a time from a button: it waits (disabled) until the run has answered.
  async function perform(button, action, body, after) {
    button.disabled = true;
    say("");
    try {
      say(await post(action, body), false);
      if (after) after();
      poll(false);
    } catch (err) {
      say(err.message, true);
    } finally {
      button.disabled = false;
    }
  }

  // -- the terminal -----------------------------------------------------------------------
  // The agent's width, the font shrunk (not below 7 px) to fit a narrow screen.
  function fit() {
    const room = $("screen").clientWidth - 8;
    const px = Math.max(7, Math.min(14, Math.floor(room / (size.cols * 0.6))));
    if (term.options.fontSize !== px) term.options.fontSize = px;
  }

  function bytes(text) {
    const raw = atob(text);
    const out = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
    return out;
  }

  function note(text) {
    $("screen-note").textContent = text;
    $("screen-note").hidden = !text;
  }

  function watch() {
    term = new Terminal({ disableStdin: true, scrollback: 5000, fontSize: 13, cursorBlink: false });
    term.open($("terminal"));
    window.addEventListener("resize", fit);
    connect();
  }

  function connect() {
    const source = new EventSource(base + "/terminal");
    source.addEventListener("hello", (e) => {
      size = JSON.parse(e.data);
      term.reset(); // a reconnection paints the screen again from the start
      term.resize(size.cols, size.rows);
      fit();
      note("");
    });
    source.addEventListener("output", (e) => term.write(bytes(JSON.parse(e.data))));
    source.addEventListener("end", (e) => {
      const end = JSON.parse(e.data);
      source.close();
      note("the run ended: " + end.outcome + " (exit " + end.exit_code + ")");
    });
    source.addEventListener("gone", (e) => {
      source.close();
      note(JSON.parse(e.data).reason);
    });
    // The browser reconnects by itself after a cut stream, but not after an answer that
    // is no stream (a busy server's 503): then the page tries again while the run lives.
    source.addEventListener("error", () => {
      if (source.readyState !== EventSource.CLOSED || !live) return;
      note("the terminal's stream was refused; trying again");
      setTimeout(connect, 3000);
    });
  }

  // -- what the run waits on, its budgets ---------------------------------------------------
  const TITLES = {
    escalation: "The run escalated: it waits for your answer",
    question: "The agent asks",
    dialog: "The agent asks for approval",
  };

  function showWaiting(waiting) {
    const key = JSON.stringify(waiting);
    if (key === shownWaiting) return updateUntil(waiting);
    shownWaiting = key;
    $("waiting").hidden = !waiting;
    if (!waiting) return;
    $("waiting").dataset.kind = waiting.kind;
    $("waiting-title").textContent = TITLES[waiting.kind] || waiting.kind;
    $("waiting-text").textContent = waiting.text;
    const dialog = waiting.kind === "dialog";
    $("dialog").hidden = !dialog;
    // A question's options are its picker's labels: choosing one sends its text.
    $("waiting-options").replaceChildren(
      ...(dialog ? [] : waiting.options).map((option) => {
        const button = el("button", option);
        button.type = "button";
        button.addEventListener("click", () => perform(button, "send", { text: option }));
        return button;
      }),
    );
    updateUntil(waiting);
  }

  function updateUntil(waiting) {
    const until = $("waiting-until");
    until.hidden = !(waiting && waiting.until);
    if (!until.hidden) {
      const left = Math.max(0, waiting.until - Date.now() / 1000);
      const how = waiting.options.length ? "an option or a message" : "a message below";
      until.textContent = "it waits " + duration(left) + " more, then ends (exit 7): answer with " + how;
    }
  }

  function showBudgets(row, budgets) {
    const b = budgets || { max_iter: row.max_iter, max_time: null, max_cost: null };
    $("used-iter").textContent = row.iterations + " of " + (b.max_iter || "no limit");
    $("used-time").textContent = duration(row.elapsed_s) + " of " + duration(b.max_time);
    $("used-cost").textContent = "$" + Number(row.cost_usd || 0).toFixed(2) + " of "
      + (b.max_cost === null || b.max_cost === undefined ? "no limit" : "$" + Number(b.max_cost).toFixed(2));
  }

  function showRun(row, control) {
    $("run-id").textContent = row.run_id;
    const state = $("run-state");
    state.textContent = String(row.label || row.state);
    state.className = "state tone-" + String(row.tone || "").replace(/[^a-z]/gi, "");
    $("task").textContent = row.task || "";
    live = Boolean(control.live);
    $("steer").hidden = !live;
    showWaiting(live ? control.waiting : null);
    showBudgets(row, control.budgets);
  }

  async function poll(again) {
    try {
      const [row, control] = await Promise.all([getJSON(base), getJSON(base + "/steer")]);
      showRun(row, control);
      setStatus(live ? "live · updated " + new Date().toLocaleTimeString() : "this run is not running", false);
    } catch (err) {
      setStatus("cannot reach ptysup serve (" + err.message + ")", true);
    }
    if (again) setTimeout(() => poll(true), POLL_MS);
  }

  // -- the person's actions ---------------------------------------------------------------
  $("send-form").addEventListener("submit", (e) => {
    e.preventDefault(); // no navigation: the message goes by fetch
    const text = $("message").value;
    if (!text.trim()) return;
    perform($("send"), "send", { text: text }, () => { $("message").value = ""; });
  });
  $("message").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) $("send-form").requestSubmit();
  });
  $("budget").addEventListener("click", () => {
    const changes = {};
    for (const key of ["max_iter", "max_time", "max_cost"]) {
      const value = $(key).value.trim();
      if (value) changes[key] = value;
    }
    if (!Object.keys(changes).length) return say("type a new budget (60) or a raise (+10) first", true);
    perform($("budget"), "budget", changes, () => {
      for (const key of Object.keys(changes)) $(key).value = "";
    });
  });
  // The dialog's exact text as shown goes with the click: the run approves only that one.
  $("approve").addEventListener("click", () => {
    perform($("approve"), "approve", { dialog: $("waiting-text").textContent });
  });
  // Stopping takes a second click within five seconds.
  let armed = null;
  $("stop").addEventListener("click", () => {
    if (armed === null) {
      $("stop").textContent = "Click again to stop it (exit 8)";
      armed = setTimeout(() => { armed = null; $("stop").textContent = "Stop the run"; }, 5000);
      return;
    }
    clearTimeout(armed);
    armed = null;
    $("stop").textContent = "Stop the run";
    perform($("stop"), "stop", {});
  });

  if (!runId) {
    $("no-run").hidden = false;
    $("screen").hidden = true;
    setStatus("", false);
    return;
  }
  document.title = "ptysup: steer " + runId;
  watch();
  poll(true);
})();
