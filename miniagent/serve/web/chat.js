// The page's whole job: post a question to chat/stream, read the Server-Sent Events of the
// answer as they arrive, and show them: the text as it grows, each tool call with its result.
//
// EventSource can only GET, so the events are read from fetch()'s body by hand: an event
// is a block of lines ended by a blank line, `event: NAME` and `data: JSON` (the server
// writes "\n" line ends), and a line starting with ":" is a comment (a keep-alive).
// What the model or a tool wrote only ever goes into textContent (or a text node), never
// into innerHTML: an answer containing <img onerror=...> stays text.
//
// A tool that needs a person's approval makes the server send `approval`: the page shows
// the call with Approve and Deny (and a box for a reason) under the tool line, and posts
// the click to chat/approve; the run waits for it, then goes on (`approval_result`).
"use strict";

// Every text the page writes, in the page's language (<html lang>, which the server sets from
// MINIAGENT_LANG). What the model, a tool or the server said is shown as it came.
const TEXTS = {
  en: {
    newConversation: "new conversation", newButton: "New conversation", send: "Send", stop: "Stop",
    placeholder: "Ask something (Enter sends, Shift+Enter starts a new line)", tool: "tool ",
    conversation: "conversation ", running: "running…", tokens: (i, o) => i + " tokens in, " + o + " out",
    done: "done", stopped: (stop, reason) => "stopped (" + stop + "): " + reason, error: "error: ",
    errorStatus: (status) => "error " + status + ": ", reason: "reason (optional, told to the model if you deny)",
    approve: "Approve", deny: "Deny", asks: (name) => "Run " + name + "? It needs your approval.",
    notSent: (why) => "the answer could not be sent (" + why + ")", waiting: "waiting for your approval…",
    approved: "approved", denied: (why) => "denied" + (why ? ": " + why : ""), cut: "the connection closed before the answer was complete",
    youStopped: "stopped: you pressed Stop", runEnded: "the run ended before an answer",
  },
  zh: {
    newConversation: "新对话", newButton: "新对话", send: "发送", stop: "停止",
    placeholder: "问点什么（Enter 发送，Shift+Enter 换行）", tool: "工具 ",
    conversation: "对话 ", running: "运行中…", tokens: (i, o) => "输入 " + i + " token，输出 " + o,
    done: "完成", stopped: (stop, reason) => "已停止（" + stop + "）：" + reason, error: "出错：",
    errorStatus: (status) => "出错 " + status + "：", reason: "理由（可不填；拒绝时会告诉模型）",
    approve: "批准", deny: "拒绝", asks: (name) => "要运行 " + name + " 吗？它需要你批准。",
    notSent: (why) => "你的决定没能发出去（" + why + "）", waiting: "等你批准…",
    approved: "已批准", denied: (why) => "已拒绝" + (why ? "：" + why : ""), cut: "回答还没完，连接就断了",
    youStopped: "已停止：你按了停止", runEnded: "还没等到你的决定，这次运行就结束了",
  },
};
const say = TEXTS[document.documentElement.lang.toLowerCase().startsWith("zh") ? "zh" : "en"];
for (const node of document.querySelectorAll("[data-say]")) node.textContent = say[node.dataset.say];
for (const node of document.querySelectorAll("[data-say-placeholder]")) node.placeholder = say[node.dataset.sayPlaceholder];
document.documentElement.style.setProperty("--tool-label", JSON.stringify(say.tool));

const log = document.getElementById("log");
const form = document.getElementById("ask");
const input = document.getElementById("message");
const send = document.getElementById("send");
const label = document.getElementById("conversation");
let conversationId = null;   // kept for follow-up questions
let running = null;          // the AbortController of the question being answered

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function parseEvent(block) {
  let name = "message", data = "";
  for (const line of block.split("\n")) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") name = value;
    else if (field === "data") data += (data ? "\n" : "") + value;
  }
  return data ? {name, data: JSON.parse(data)} : null;
}

async function* readEvents(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const {value, done} = await reader.read();
    if (done) return;
    buffer += value;   // a chunk may end anywhere, even inside an event: keep the rest for later
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = parseEvent(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (event) yield event;
    }
  }
}

function newTurn(question) {
  const turn = {section: element("section", "turn"), text: null, calls: new Map(), approvals: new Map(),
                tokens: [0, 0], ended: false};
  turn.section.append(element("div", "question", question));
  log.append(turn.section);
  return turn;
}

function status(turn, text, isError) {
  turn.section.append(element("p", isError ? "status error" : "status", text));
}

function show(turn, {name, data}) {
  if (name === "conversation") {
    conversationId = data.conversation_id;
    label.textContent = say.conversation + conversationId.slice(0, 8) + "…";
  } else if (name === "text") {
    if (!turn.text) turn.section.append(turn.text = element("div", "text"));
    turn.text.append(data.text);   // append(string) adds a text node: never parsed as HTML
  } else if (name === "tool_use") {
    let call = turn.calls.get(data.id);
    if (!call) {
      call = element("div", "tool");
      call.append(element("div", "call"), element("div", "result running", say.running));
      turn.calls.set(data.id, call);
      turn.section.append(call);
      turn.text = null;   // text after a tool call is a new paragraph, below it
    }
    const args = data.done ? JSON.stringify(data.input) : "…";
    call.querySelector(".call").textContent = data.name + "(" + args + ")";
  } else if (name === "approval") {
    askApproval(turn, data);
  } else if (name === "approval_result") {
    const box = turn.approvals.get(data.approval_id);
    if (box) settle(box, data.approved, data.reason);   // no-op when the click already settled it
  } else if (name === "tool_result") {
    const call = turn.calls.get(data.id);
    if (!call) return;
    const result = call.querySelector(".result");
    result.className = "result";
    result.textContent = "→ " + data.content;
    if (data.is_error) call.classList.add("failed");
  } else if (name === "usage") {
    turn.tokens[0] += data.input_tokens || 0;
    turn.tokens[1] += data.output_tokens || 0;
  } else if (name === "done") {
    turn.ended = true;
    const tokens = say.tokens(turn.tokens[0], turn.tokens[1]);
    const how = data.ok ? say.done : say.stopped(data.stop, data.reason);
    status(turn, how + " · " + tokens, !data.ok);
  } else if (name === "error") {
    turn.ended = true;
    status(turn, say.error + data.message, true);
  }
}

// The question a tool call asks: its name and arguments, Approve, Deny and a reason box.
function askApproval(turn, data) {
  const box = element("div", "approval");
  const reason = element("input", "reason");
  reason.type = "text";
  reason.maxLength = 500;
  reason.placeholder = say.reason;
  const approve = element("button", "approve", say.approve);
  const deny = element("button", "deny", say.deny);
  approve.type = deny.type = "button";
  const buttons = element("div", "buttons");
  buttons.append(approve, deny, reason);
  box.append(element("div", "asks", say.asks(data.name)),
             element("pre", "args", JSON.stringify(data.input, null, 2)), buttons);
  box.settled = false;
  const answer = async (approved) => {
    approve.disabled = deny.disabled = reason.disabled = true;
    const why = reason.value.trim();
    const body = {conversation_id: data.conversation_id, approval_id: data.approval_id, approved};
    if (!approved && why) body.reason = why;
    try {
      const response = await fetch("chat/approve", {method: "POST", headers: {"content-type": "application/json"},
                                                    body: JSON.stringify(body)});
      const reply = await response.json().catch(() => ({}));
      if (response.ok) settle(box, reply.approved, reply.reason);
      else settle(box, false, reply.error ? reply.error.message : response.statusText);
    } catch (err) {
      settle(box, false, say.notSent(err.message));
    }
  };
  approve.addEventListener("click", () => answer(true));
  deny.addEventListener("click", () => answer(false));
  turn.approvals.set(data.approval_id, box);
  const call = turn.calls.get(data.tool_use_id);
  const result = call && call.querySelector(".result.running");
  if (result) {   // above the result, which waits for the answer
    result.textContent = say.waiting;
    result.before(box);
  } else {
    turn.section.append(box);
  }
  turn.text = null;
  reason.focus();
}

// Once answered (by a click, a timeout, or the run ending): the buttons give way to the outcome.
function settle(box, approved, reason) {
  if (box.settled) return;
  box.settled = true;
  box.classList.add(approved ? "approved" : "denied");
  box.querySelector(".buttons").replaceWith(
    element("div", "outcome", approved ? say.approved : say.denied(reason)));
}

async function ask(question) {
  const turn = newTurn(question);
  const body = conversationId ? {message: question, conversation_id: conversationId} : {message: question};
  running = new AbortController();
  send.textContent = say.stop;
  try {
    const response = await fetch("chat/stream", {method: "POST", headers: {"content-type": "application/json"},
                                                 body: JSON.stringify(body), signal: running.signal});
    if (!response.ok) {
      const answer = await response.json().catch(() => ({}));
      const why = answer.error ? answer.error.message : response.statusText;
      status(turn, say.errorStatus(response.status) + why, true);
      if (response.status === 404) forget();   // the server no longer knows this conversation
      return;
    }
    for await (const event of readEvents(response)) show(turn, event);
    if (!turn.ended) status(turn, say.error + say.cut, true);
  } catch (err) {
    status(turn, err.name === "AbortError" ? say.youStopped : say.error + err.message, true);
  } finally {
    for (const box of turn.approvals.values()) settle(box, false, say.runEnded);
    running = null;
    send.textContent = say.send;
    window.scrollTo(0, document.body.scrollHeight);
  }
}

function forget() {
  conversationId = null;
  label.textContent = say.newConversation;
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  if (running) { running.abort(); return; }   // the button says Stop: closing the stream cancels the run
  const question = input.value.trim();
  if (!question) return;
  input.value = "";
  ask(question);
});

input.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    if (!running) form.requestSubmit();
  }
});

document.getElementById("new").addEventListener("click", () => {
  if (running) running.abort();
  forget();
  log.replaceChildren();
});

input.focus();
