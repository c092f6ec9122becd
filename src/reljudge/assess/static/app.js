// reljudge assess: the grading page. Every text from the server goes into the page through
// textContent (never innerHTML), so a passage holding HTML or <script> shows as text.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  let S = null;               // the task: title, scale, items (from api/state)
  let grades = {};            // item index -> grade (the server's word, or an unconfirmed one)
  let notes = {};             // item index -> note
  let cur = 0;                // the item on screen
  let shownAt = performance.now();
  let showLLM = false;
  let pending = 0;            // requests not answered yet
  let failed = null;          // the last failure, shown until the next success
  let lastSaved = "";
  let chain = Promise.resolve();
  const inflight = [];        // grades sent but not answered yet: {i, g}
  const items = new Map();    // index -> item texts (fetched once)
  let renderSeq = 0;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = String(text);
    return e;
  }

  async function api(path, body) {
    const opts = body === undefined ? {} : {
      method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)};
    const r = await fetch(path, opts);
    let data = null;
    try { data = await r.json(); } catch (e) { data = null; }
    if (!r.ok) throw new Error((data && data.error) || ("the server answered " + r.status));
    return data;
  }

  function sync(d) {
    grades = {}; notes = {};
    for (const [k, v] of Object.entries(d.grades || {})) grades[+k] = v;
    for (const [k, v] of Object.entries(d.notes || {})) notes[+k] = v;
    for (const x of inflight) grades[x.i] = x.g;  // still on their way: keep them shown
  }

  function setStatus(state, text) {
    const s = $("status");
    s.dataset.state = state;
    s.textContent = text;
    // the header keeps a short form in view on small screens
    const short = {saving: "saving…", saved: "✓ saved", undone: "✓ undone", error: "NOT saved"};
    $("hstatus").dataset.state = state;
    $("hstatus").textContent = short[state] || "";
  }

  function showStatus() {
    if (pending > 0) setStatus("saving", "Saving…");
    else if (failed) setStatus("error", "NOT saved: " + failed + " — try again");
    else if (lastSaved) setStatus(lastSaved.startsWith("undone") ? "undone" : "saved", lastSaved);
    else setStatus("idle", "");
  }

  // Requests run one after another, in the order the keys were pressed.
  function enqueue(job) {
    pending += 1;
    showStatus();
    chain = chain.then(job).then(() => { failed = null; }, (err) => { failed = err.message; })
      .then(async () => {
        if (failed) {  // show what the store really holds
          try { sync(await api("api/state")); } catch (e) { /* keep the error shown */ }
        }
      })
      .finally(() => { pending -= 1; showStatus(); renderMarks(); });
  }

  function time() { return new Date().toLocaleTimeString(); }

  function nextUngraded(from) {
    const n = S.items.length;
    for (let k = 1; k <= n; k++) {
      const i = (from + k) % n;
      if (grades[i] === undefined) return i;
    }
    return null;
  }

  function grade(g, advance) {
    const i = cur;
    const note = $("note").value;
    const seconds = Math.round((performance.now() - shownAt)) / 1000;
    const mine = {i: i, g: g};
    const before = grades[i];
    inflight.push(mine);
    grades[i] = g;
    if (note.trim()) notes[i] = note; else delete notes[i];
    enqueue(async () => {
      let answer = null;
      try {
        answer = await api("api/grade", {index: i, grade: g, note: note, seconds: seconds});
      } catch (err) {  // not in the store: do not show it as given
        if (before === undefined) delete grades[i]; else grades[i] = before;
        throw err;
      } finally {
        inflight.splice(inflight.indexOf(mine), 1);
      }
      sync(answer);
      lastSaved = "Saved: pair " + (i + 1) + " graded " + g + (note.trim() ? " with a note" : "") +
        " at " + time();
    });
    if (advance) {
      const next = nextUngraded(i);
      go(next === null ? Math.min(i + 1, S.items.length - 1) : next);
    } else {
      renderMarks();
    }
  }

  function undo() {
    enqueue(async () => {
      const d = await api("api/undo", {});
      sync(d);
      if (d.undone === null) {
        lastSaved = "undone: nothing to undo";
      } else {
        lastSaved = "undone: pair " + (d.undone + 1) + " is ungraded again (" + time() + ")";
        go(d.undone);
      }
    });
  }

  function go(i) {
    if (i < 0 || i >= S.items.length) return;
    cur = i;
    render();
  }

  async function item(i) {
    if (!items.has(i)) items.set(i, await api("api/item/" + i));
    return items.get(i);
  }

  async function render() {
    const seq = ++renderSeq;
    const i = cur;
    let it;
    try {
      it = await item(i);
    } catch (err) {
      failed = err.message;
      showStatus();
      return;
    }
    if (seq !== renderSeq) return;  // a later move won
    $("loading").hidden = true;
    $("pair").hidden = false;
    $("position").textContent = "pair " + (i + 1) + " of " + S.items.length;
    $("qid").textContent = it.qid;
    $("docid").textContent = it.docid;
    $("query").textContent = it.query;
    $("narrative").hidden = !it.narrative;
    $("narrative").textContent = it.narrative || "";
    $("passage-title").textContent = it.title || "";
    $("passage-title").hidden = !it.title;
    $("passage").textContent = it.passage;
    $("note").value = notes[i] || "";
    shownAt = performance.now();
    renderLLM(it);
    renderMarks();
    if (items.size < S.items.length && i + 1 < S.items.length) item(i + 1).catch(() => {});
    document.body.dataset.ready = "1";
  }

  function renderLLM(it) {
    const box = $("llm");
    box.hidden = !showLLM;
    box.textContent = "";
    if (!showLLM) return;
    if (!it.llm.length) { box.textContent = "no LLM grade for this pair"; return; }
    box.textContent = "LLM: " + it.llm.map((x) => x.source + " gave " + x.grade).join("; ");
  }

  function renderMarks() {
    if (!S) return;
    const n = S.items.length;
    const done = Object.keys(grades).length;
    $("done").textContent = done + " / " + n + " graded";
    $("bar-fill").style.width = (100 * done / n).toFixed(1) + "%";
    $("finished").hidden = done < n;
    const g = grades[cur];
    const c = $("current");
    c.textContent = g === undefined ? "· not graded yet" : "· your grade: " + g;
    c.className = g === undefined ? "" : "given";
    for (const b of $("scale").children) b.classList.toggle("chosen", +b.dataset.grade === g);
    const perQuery = new Map();
    S.items.forEach((x, i) => {
      const p = perQuery.get(x.qid) || {done: 0, total: 0};
      p.total += 1;
      if (grades[i] !== undefined) p.done += 1;
      perQuery.set(x.qid, p);
    });
    const q = perQuery.get(S.items[cur].qid);
    $("query-done").textContent = "this query: " + q.done + " / " + q.total;
    const table = $("queries");
    table.textContent = "";
    for (const [qid, p] of perQuery) {
      const tr = el("tr");
      tr.append(el("td", "", qid), el("td", "", p.done + " / " + p.total));
      table.append(tr);
    }
  }

  function buildScale() {
    const box = $("scale");
    for (const s of S.scale) {
      const b = el("button");
      b.type = "button";
      b.dataset.grade = s.grade;
      b.title = "grade " + s.grade + " (key " + s.grade + ")";
      b.append(el("span", "n", s.grade), el("span", "name", s.name), el("span", "text", s.text));
      b.addEventListener("click", () => grade(s.grade, true));
      box.append(b);
    }
  }

  // Enter in the note: back to grading either way; a graded pair's note is saved with its
  // grade at once, an ungraded pair's note waits for the grade key (digits grade again).
  function saveNote() {
    $("note").blur();
    if (grades[cur] === undefined) {
      failed = null;
      lastSaved = "";
      setStatus("note", "note kept: press 0–3 to grade the pair with it");
      return;
    }
    grade(grades[cur], false);
  }

  function showMode() {
    const writing = document.activeElement === $("note");
    $("mode").dataset.mode = writing ? "note" : "grading";
    $("mode").textContent = writing
      ? "writing a note: keys type text · Enter saves it · Esc back to grading"
      : "grading: 0–3 grade the pair · n write a note";
  }

  function onKey(e) {
    if (e.ctrlKey || e.metaKey || e.altKey || !S) return;
    if (e.target && e.target.id === "note") {
      if (e.key === "Escape") { e.preventDefault(); e.target.blur(); }
      else if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); saveNote(); }
      return;
    }
    const k = e.key;
    // a held key repeats: one grade (or undo) per press, never one per repeat
    if (e.repeat && ((k >= "0" && k <= "3") || k === "u")) { e.preventDefault(); return; }
    if (k >= "0" && k <= "3" && k.length === 1) grade(+k, true);
    else if (k === "ArrowRight" || k === "j") go(cur + 1);
    else if (k === "ArrowLeft" || k === "k") go(cur - 1);
    else if (k === "u") undo();
    else if (k === "n") $("note").focus();
    else if (k === "l") { $("show-llm").checked = !showLLM; toggleLLM(); }
    else return;
    e.preventDefault();
  }

  function toggleLLM() {
    showLLM = $("show-llm").checked;
    if (items.has(cur)) renderLLM(items.get(cur));
  }

  async function start() {
    try {
      S = await api("api/state");
    } catch (err) {
      $("loading").textContent = "Cannot load the task: " + err.message;
      return;
    }
    sync(S);
    $("task").textContent = S.title;
    $("annotator").textContent = S.annotator;
    document.title = "reljudge assess: " + S.title;
    $("show-llm").parentElement.hidden = !S.llm;
    buildScale();
    document.addEventListener("keydown", onKey);
    $("note").addEventListener("focus", showMode);
    $("note").addEventListener("blur", showMode);
    showMode();
    $("prev").addEventListener("click", () => go(cur - 1));
    $("next").addEventListener("click", () => go(cur + 1));
    $("undo").addEventListener("click", undo);
    $("show-llm").addEventListener("change", toggleLLM);
    const done = Object.keys(grades).length;
    if (done) lastSaved = "Saved: your " + done + " grades so far are in the store";
    showStatus();
    const first = nextUngraded(S.items.length - 1);
    go(first === null ? 0 : first);
  }

  document.addEventListener("DOMContentLoaded", start);
})();
