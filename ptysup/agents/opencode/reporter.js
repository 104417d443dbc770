// ptysup's reporter for one run of opencode's terminal UI, written into the run's private
// directory (see ptysup/agents/opencode/reporter.py). It forwards what ptysup needs of
// opencode's events to ptysup's private socket, one payload per connection as ptysup's
// hook client sends them, and answers a question with what ptysup replies. A TUI plugin
// loads in the terminal UI only: an `opencode run` the agent starts itself reports nothing.
import net from "node:net"
import { spawn } from "node:child_process"

const SOCKET = __SOCKET__
const TOKEN = __TOKEN__
// ptysup's hook client, waiting for ptysup's reply: Bun closes a Unix socket whole when
// its writing side ends, so a reply could never come back on the plugin's own connection.
const ASK_COMMAND = __ASK_COMMAND__

function send(payload) {
  return new Promise((resolve) => {
    const conn = net.createConnection({ path: SOCKET })
    const timer = setTimeout(() => conn.destroy(), 5000)
    conn.on("connect", () => conn.end(TOKEN + "\n" + JSON.stringify(payload)))
    conn.on("error", () => {})
    conn.on("close", () => {
      clearTimeout(timer)
      resolve("")
    })
  })
}

function request(payload) {
  return new Promise((resolve) => {
    const out = []
    const child = spawn("/bin/sh", ["-c", ASK_COMMAND], { stdio: ["pipe", "pipe", "ignore"] })
    child.stdout.on("data", (chunk) => out.push(chunk))
    child.on("error", () => resolve(""))
    child.on("close", () => resolve(Buffer.concat(out).toString("utf8")))
    child.stdin.end(JSON.stringify(payload))
  })
}

// In order, as hooks arrive: each connects once the one before it was taken.
let queue = Promise.resolve("")
function report(name, sessionID, extra, wait) {
  const payload = { hook_event_name: name, session_id: sessionID || "", ...extra }
  const go = () => (wait ? request(payload) : send(payload))
  queue = queue.then(go, go)
  return queue
}

function texts(api, messageID) {
  return api.state
    .part(messageID)
    .filter((part) => part.type === "text" && !part.synthetic && !part.ignored)
    .map((part) => part.text)
    .join("\n")
}

function lastAssistant(api, sessionID) {
  const messages = api.state.session.messages(sessionID).filter((m) => m.role === "assistant")
  const last = messages[messages.length - 1]
  return last ? texts(api, last.id) : ""
}

function tokens(api, sessionID) {
  let input = 0
  let output = 0
  for (const m of api.state.session.messages(sessionID)) {
    if (m.role !== "assistant" || !m.tokens) continue
    input += m.tokens.input || 0
    output += m.tokens.output || 0
  }
  return { input, output, total: input + output }
}

export default {
  id: "ptysup-reporter",
  tui: async (api) => {
    const seen = new Set() // user messages already reported
    const sessions = new Set()
    const busy = new Set() // sessions working on a turn whose end is not reported yet
    const failed = new Map() // session → the error its turn ended on
    const route = api.route.current
    const opened = route && route.params && route.params.sessionID
    if (opened) sessions.add(opened)
    // The terminal UI takes keys from now on: what is typed before is lost.
    report("tui.ready", opened, { source: opened ? "resume" : "startup" })
    api.event.on("session.created", (event) => {
      const info = event.properties.info || {}
      if (info.parentID) return // a subagent's session, not the person's conversation
      const source = sessions.size ? "clear" : "startup"
      sessions.add(event.properties.sessionID)
      // Named as ptysup names it: its channel takes a session as the run's on SessionStart.
      report("SessionStart", event.properties.sessionID, { source })
    })
    api.event.on("session.status", (event) => {
      const { sessionID, status } = event.properties
      if (!sessions.has(sessionID) || !status || status.type !== "busy") return
      busy.add(sessionID)
      const users = api.state.session.messages(sessionID).filter((m) => m.role === "user")
      const last = users[users.length - 1]
      if (!last || seen.has(last.id)) return
      seen.add(last.id)
      report("prompt", sessionID, { prompt: texts(api, last.id) })
    })
    // One turn end per turn: opencode may say idle more than once, and after an error.
    api.event.on("session.idle", (event) => {
      const { sessionID } = event.properties
      if (!busy.delete(sessionID)) return
      const aborted = failed.get(sessionID) === null
      const error = failed.get(sessionID)
      failed.delete(sessionID)
      if (aborted) return
      if (error) return report("session.error", sessionID, error)
      report("session.idle", sessionID, {
        last_assistant_message: lastAssistant(api, sessionID),
        tokens: tokens(api, sessionID),
      })
    })
    api.event.on("session.error", (event) => {
      const { sessionID, error } = event.properties
      if (!sessions.has(sessionID)) return
      const data = (error && error.data) || {}
      const name = (error && error.name) || "error"
      // An interrupted turn (Esc) is no failure, and says nothing, as Claude Code's.
      if (name === "MessageAbortedError") return failed.set(sessionID, null)
      failed.set(sessionID, { error: data.message ? `${name}: ${data.message}` : name })
    })
    const asking = new Map() // permission request → its session
    api.event.on("permission.asked", (event) => {
      const p = event.properties
      if (!sessions.has(p.sessionID)) return
      asking.set(p.id, p.sessionID)
      report("permission.asked", p.sessionID, { tool_name: p.permission, tool_input: p.metadata || {}, patterns: p.patterns || [] })
    })
    api.event.on("permission.replied", (event) => {
      const p = event.properties
      const sessionID = p.sessionID || asking.get(p.requestID)
      asking.delete(p.requestID)
      // A rejected call ends the turn, as Esc at Claude Code's dialog does: nothing to
      // report. Its session.idle comes a moment after the input box is back, and would be
      // read as the end of the turn of whatever ptysup types next.
      if (p.reply === "reject" && busy.has(sessionID)) failed.set(sessionID, null)
    })
    api.event.on("question.asked", async (event) => {
      const p = event.properties
      if (!sessions.has(p.sessionID)) return
      const tool = p.tool || {}
      const said = await report("question.asked", p.sessionID, { questions: p.questions, tool_use_id: tool.callID || p.id }, true)
      let reply
      try {
        reply = said ? JSON.parse(said) : undefined
      } catch {
        reply = undefined
      }
      if (!reply) return // left to the person: the dialog stays open
      if (Array.isArray(reply.answers)) await api.client.question.reply({ requestID: p.id, answers: reply.answers })
      else if (reply.reject) await api.client.question.reject({ requestID: p.id })
    })
  },
}
