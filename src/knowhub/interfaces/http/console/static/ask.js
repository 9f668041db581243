// The Ask page (templates/ask.html): sends the question to /ui/ask/stream and draws the
// Server-Sent Events as they come — tokens into the answer, then its [n] citations as links
// to /ui/source/<chunk id>, the sources, the diagnostics and the feedback buttons. Without
// this script the form still posts to /ui/ask and the answer comes back as a page.
"use strict";

(function () {
  const form = document.getElementById("ask-form");
  if (!form) return;
  const conversation = document.getElementById("conversation");
  const template = document.getElementById("turn-template");
  const session = document.getElementById("session-id");
  const button = document.getElementById("ask-button");
  const fresh = document.getElementById("new-conversation");
  const failure = document.getElementById("stream-error");
  const question = document.getElementById("question");

  function newSession() {
    const bytes = new Uint8Array(12);
    crypto.getRandomValues(bytes);
    return "ui-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  function el(tag, text, cls) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }

  function sourceHref(chunkId) {
    return "/ui/source/" + encodeURIComponent(chunkId);
  }

  // The answer text with each [n] that names a source made a link to that source's chunk.
  function linked(target, text, sources) {
    const byNumber = new Map(sources.map((s) => [Number(s.n), s]));
    target.textContent = "";
    let at = 0;
    for (const found of text.matchAll(/\[(\d{1,3})\]/g)) {
      const source = byNumber.get(Number(found[1]));
      if (!source) continue;
      target.append(text.slice(at, found.index));
      const a = el("a", found[0], "cite");
      a.href = sourceHref(source.chunk_id);
      a.title = source.source + (source.page ? " · page " + source.page : "");
      target.append(a);
      at = found.index + found[0].length;
    }
    target.append(text.slice(at));
  }

  function showSources(turn, sources) {
    const list = turn.querySelector(".sources");
    list.textContent = "";
    for (const s of sources) {
      const item = el("li");
      item.value = s.n;
      const a = el("a", s.source);
      a.href = sourceHref(s.chunk_id);
      item.append(a);
      const where = [];
      if (s.page) where.push("page " + s.page);
      if (s.section_path) where.push(s.section_path);
      if (s.line_start) where.push("lines " + s.line_start + "–" + s.line_end);
      if (where.length) item.append(" · " + where.join(" · "));
      item.append(" ", el("span", "score " + Number(s.score).toFixed(3), "muted"));
      list.append(item);
    }
    list.hidden = sources.length === 0;
  }

  function showDiagnostics(turn, end, firstTokenMs) {
    const facts = turn.querySelector(".diag dl");
    const rows = [];
    if (end.hit_type) rows.push(["hit type", end.hit_type]);
    if (end.sources_count !== undefined) rows.push(["sources", end.sources_count]);
    if (end.top_source_score !== undefined && end.top_source_score !== null)
      rows.push(["top source score", end.top_source_score]);
    if (end.confidence !== undefined)
      rows.push(["confidence", end.confidence + (end.reasons && end.reasons.length ? " · " + end.reasons.join(", ") : "")]);
    if (end.verification) rows.push(["verification", end.generation_verification_status + " · score " + end.verification.score]);
    if (end.question_category)
      rows.push(["category", end.question_category + (end.prompt_profile ? " · profile " + end.prompt_profile : "")]);
    const kb = end.kb_version;
    if (kb) rows.push(["kb version", "version " + kb.version + (kb.physical ? " (" + kb.physical + ")" : "")]);
    if (end.model) rows.push(["model", end.model]);
    if (firstTokenMs !== null) rows.push(["first token (this browser)", firstTokenMs.toFixed(0) + " ms"]);
    for (const [stage, ms] of Object.entries(end.timings_ms || {})) rows.push([stage, ms + " ms"]);
    for (const note of end.notes || []) rows.push(["note", note]);
    facts.textContent = "";
    for (const [name, value] of rows) facts.append(el("dt", name), el("dd", value));
    const dt = el("dt", "trace");
    const dd = el("dd");
    if (end.trace_id) {
      const a = el("a", end.trace_id, "mono trace-link");
      a.href = "/ui/traces/" + encodeURIComponent(end.trace_id);
      dd.append(a);
    } else {
      const a = el("a", "find it among the answer traces");
      a.href = "/ui/traces?kind=answer";
      dd.append(a);
    }
    facts.append(dt, dd);
    turn.querySelector(".diag").hidden = false;
  }

  // What to know before relying on the answer (the answer's warnings): shown, never folded.
  function showWarnings(turn, end) {
    const list = turn.querySelector(".warnings");
    const lines = end.warnings || [];
    list.textContent = "";
    for (const line of lines) list.append(el("li", line));
    list.hidden = lines.length === 0;
  }

  // Sentences the verification found unsupported by what they cite: listed, never hidden.
  function showFlagged(turn, end) {
    const box = turn.querySelector(".flagged");
    const flagged = (end.verification && end.verification.flagged) || [];
    const list = box.querySelector("ul");
    list.textContent = "";
    for (const sentence of flagged) list.append(el("li", sentence));
    box.hidden = flagged.length === 0;
  }

  function showHitType(turn, hitType) {
    const badge = turn.querySelector(".hit-type");
    const labels = { faq_direct: ["FAQ answer", "faq"], insufficient_context: ["Not enough in the documents", "insufficient"] };
    const label = labels[hitType];
    if (!label) return;
    badge.textContent = label[0];
    badge.classList.add(label[1]);
    badge.hidden = false;
  }

  function showTool(turn, kind, data) {
    const log = turn.querySelector(".tools-log");
    log.hidden = false;
    if (kind === "tool_call") {
      const item = el("li", data.server + "/" + data.tool + " " + JSON.stringify(data.arguments), "mono");
      item.dataset.call = data.call_id;
      log.append(item);
    } else {
      const item = Array.from(log.children).find((li) => li.dataset.call === data.call_id);
      const text = data.error ? " → error: " + data.error : " → " + data.result_chars + " chars, " + Math.round(data.ms) + " ms";
      if (item) item.append(el("span", text, data.error ? "bad" : "muted"));
    }
  }

  function offerFeedback(turn, traceId) {
    const box = turn.querySelector(".feedback");
    const comment = box.querySelector("textarea");
    const send = box.querySelector(".send");
    const status = box.querySelector(".feedback-status");
    const save = box.querySelector(".save-case");
    const target = "/ui/traces/" + encodeURIComponent(traceId);
    save.href = target + "#save-case";
    box.hidden = false;
    async function post(helpful) {
      status.textContent = "sending…";
      const body = new URLSearchParams({ helpful: helpful, comment: comment.value });
      try {
        const response = await fetch(target + "/feedback", {
          method: "POST",
          headers: { Accept: "application/json" },
          body: body,
        });
        const data = await response.json();
        if (!response.ok) throw new Error(data.error || "HTTP " + response.status);
        status.textContent = "Thanks — saved with the trace.";
        if (helpful === "no") save.hidden = false;
      } catch (error) {
        status.textContent = "Feedback not saved: " + error.message;
      }
    }
    box.querySelector("[data-helpful=yes]").addEventListener("click", () => post("yes"));
    box.querySelector("[data-helpful=no]").addEventListener("click", () => {
      comment.hidden = false;
      send.hidden = false;
      comment.focus();
    });
    send.addEventListener("click", () => post("no"));
  }

  // Split a text/event-stream body into (event, data) pairs as its bytes arrive.
  async function* events(response) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      buffer += decoder.decode(value || new Uint8Array(), { stream: !done });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        let kind = "message";
        const data = [];
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) kind = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).trim());
        }
        if (data.length) yield [kind, JSON.parse(data.join("\n"))];
      }
      if (done) return;
    }
  }

  async function ask(turn, body) {
    const answer = turn.querySelector(".answer");
    const started = performance.now();
    let firstToken = null;
    let text = "";
    let sources = [];
    const response = await fetch(form.dataset.stream, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify(body),
    });
    if (!response.ok) {
      let message = "HTTP " + response.status;
      try { message = (await response.json()).error || message; } catch (ignored) { /* not JSON */ }
      throw new Error(message + " (" + response.status + ")");
    }
    for await (const [kind, data] of events(response)) {
      if (kind === "token") {
        if (firstToken === null) firstToken = performance.now() - started;
        text += data.text;
        answer.textContent = text;
      } else if (kind === "sources") {
        sources = data.sources;
        showSources(turn, sources);
      } else if (kind === "tool_call" || kind === "tool_result") {
        showTool(turn, kind, data);
      } else if (kind === "error") {
        throw new Error(data.error + " (" + data.status + ")");
      } else if (kind === "end") {
        sources = data.sources || data.citations || sources;
        linked(answer, data.answer, sources);
        showSources(turn, sources);
        showHitType(turn, data.hit_type);
        showWarnings(turn, data);
        showFlagged(turn, data);
        showDiagnostics(turn, data, firstToken);
        if (data.trace_id) offerFeedback(turn, data.trace_id);
        answer.dataset.done = "1";
      }
    }
    if (!answer.dataset.done) throw new Error("the answer stopped before its end: ask again");
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = question.value.trim();
    if (!text) return;
    if (!session.value) session.value = newSession();
    const tools = document.getElementById("tools");
    const body = {
      question: text,
      collection: form.elements.collection.value,
      filters: form.elements.filters.value,
      session_id: session.value,
      tools: Boolean(tools && tools.checked),
    };
    const empty = document.getElementById("empty");
    if (empty) empty.remove();
    failure.hidden = true;
    const turn = template.content.firstElementChild.cloneNode(true);
    turn.querySelector(".q").textContent = text;
    conversation.append(turn);
    turn.scrollIntoView({ block: "nearest" });
    button.disabled = true;
    try {
      await ask(turn, body);
      question.value = "";
      fresh.hidden = false;
    } catch (error) {
      const answer = turn.querySelector(".answer");
      answer.textContent = "";
      answer.append(el("span", "No answer: " + error.message, "bad"));
      failure.textContent = "The question failed: " + error.message;
      failure.hidden = false;
    } finally {
      const answer = turn.querySelector(".answer");
      answer.classList.remove("pending");
      answer.removeAttribute("aria-busy");
      button.disabled = false;
      question.focus();
    }
  });

  question.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) form.requestSubmit();
  });

  fresh.addEventListener("click", () => {
    session.value = "";
    conversation.textContent = "";
    fresh.hidden = true;
    question.focus();
  });
  form.dataset.ready = "1";  // from here on a question streams (tests wait for it)
})();
