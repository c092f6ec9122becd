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
  // A grade key stores the grade, THEN moves on: the pair stays on screen until the store
  // has its grade. Keys pressed meanwhile (a fast typist) wait in `typed` and are replayed
  // in order on the next pair; a failed save drops them, stays, and sends the grade again.
  let holding = null;         // {i, g}: the grade on its way; the page stays on pair i
  const typed = [];           // keys pressed while holding
  let retry = null;           // {timer, i, g, seconds, note}: a failed grade sent again soon
  const RETRY_MS = 3000;
  let stopped = false;        // the server was stopped from the finished page
  let summaryStale = true;    // a grade or undo was stored since the summary was drawn
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
    // every answer of the API is a JSON object: one cut off (the server died mid-answer) is
    // a failure to try again, never a pair without its text
    if (data === null) throw new Error("the server's answer was cut off");
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
    const short = {saving: "saving…", saved: "✓ saved", undone: "✓ undone", error: "NOT saved",
                   stopped: "stopped"};
    $("hstatus").dataset.state = state;
    $("hstatus").textContent = short[state] || "";
  }

  function showStatus() {
    if (pending > 0) setStatus("saving", "Saving…");
    else if (failed) setStatus("error", "NOT saved: " + failed + (retry
      ? " — this pair stays on screen; sending its grade again every " + RETRY_MS / 1000 +
        " s (or press its grade again)" : " — try again"));
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

  function cancelRetry() {
    if (retry) clearTimeout(retry.timer);
    retry = null;
  }

  function grade(g, advance, again) {
    if (stopped) return;
    if (holding && advance) { typed.push(String(g)); return; }  // a click while one is on its way
    cancelRetry();
    const i = cur;
    const note = again ? again.note : $("note").value;
    const seconds = again ? again.seconds : Math.round((performance.now() - shownAt)) / 1000;
    const mine = {i: i, g: g};
    const before = grades[i];
    inflight.push(mine);
    grades[i] = g;
    if (note.trim()) notes[i] = note; else delete notes[i];
    if (advance) holding = mine;
    enqueue(async () => {
      let answer = null;
      try {
        answer = await api("api/grade", {index: i, grade: g, note: note, seconds: seconds,
                                          llm_shown: showLLM && items.has(i) &&
                                            items.get(i).llm.length > 0});
      } catch (err) {  // not in the store: do not show it as given, and stay to send it again
        if (before === undefined) delete grades[i]; else grades[i] = before;
        if (holding === mine) {
          holding = null;
          typed.length = 0;  // they were meant for the pairs after this one
          retry = {i: i, g: g, seconds: seconds, note: note, timer: setTimeout(() => {
            if (retry && retry.i === cur && !holding) grade(retry.g, true, retry);
          }, RETRY_MS)};
        }
        throw err;
      } finally {
        inflight.splice(inflight.indexOf(mine), 1);
      }
      sync(answer);
      summaryStale = true;
      lastSaved = "Saved: pair " + (i + 1) + " graded " + g + (note.trim() ? " with a note" : "") +
        " at " + time();
      if (holding === mine) {  // stored: now move on, then play the keys pressed meanwhile
        const next = nextUngraded(i);
        await go(next === null ? Math.min(i + 1, S.items.length - 1) : next);
        holding = null;  // only now: a key pressed while the next pair loads waits its turn
        replay();
      }
    });
    renderMarks();
  }

  // The keys pressed while a grade was on its way, as if pressed now (a note being
  // written takes the printable ones as text).
  function replay() {
    while (typed.length && !holding) {
      const k = typed.shift();
      if (document.activeElement === $("note")) {
        if (k === "Enter") saveNote();
        else if (k === "Escape") $("note").blur();
        else if (k.length === 1) $("note").value += k;
      } else {
        command(k);
      }
    }
  }

  function undo() {
    enqueue(async () => {
      const d = await api("api/undo", {});
      sync(d);
      summaryStale = true;
      if (d.undone === null) {
        lastSaved = "undone: nothing to undo";
      } else {
        lastSaved = "undone: pair " + (d.undone + 1) + " is ungraded again (" + time() + ")";
        go(d.undone);
      }
    });
  }

  function go(i) {
    if (i < 0 || i >= S.items.length) return Promise.resolve();
    if (retry && retry.i !== i) cancelRetry();  // moved away: the pair shows it is ungraded
    cur = i;
    return render();
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
    renderSettle(it);
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

  // Adjudication: every grade the pair's adjudicated grade settles, with notes and the judge's
  // reasoning (its answer text).
  function renderSettle(it) {
    const box = $("settle");
    box.hidden = !S.adjudicating;
    box.textContent = "";
    if (!S.adjudicating) return;
    box.append(el("h2", "label", "Grades to settle"));
    const list = el("ul");
    for (const x of it.settle) {
      const li = el("li", x.kind);
      li.append(el("strong", "", x.source), el("span", "", " (" + x.kind + ") gave "),
                el("span", "grade", x.grade));
      if (x.note) li.append(el("div", "note", "note: " + x.note));
      if (x.reasoning) li.append(el("div", "reasoning", x.reasoning));
      list.append(li);
    }
    box.append(list);
  }

  function renderMarks() {
    if (!S) return;
    const n = S.items.length;
    const done = Object.keys(grades).length;
    $("done").textContent = done + " / " + n + " graded";
    $("bar-fill").style.width = (100 * done / n).toFixed(1) + "%";
    const finishing = $("finished").hidden && !(done < n && !stopped);
    $("finished").hidden = done < n && !stopped;
    if (finishing) intoView($("finished"));
    // the summary is the store's word: asked once every grade is stored, again after a change
    if (done === n && pending === 0 && summaryStale && !stopped) { summaryStale = false; summary(); }
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
    if (!COMMANDS.has(k)) return;
    e.preventDefault();
    if (holding) { typed.push(k); return; }  // played on the next pair, once this grade is in
    command(k);
  }

  const COMMANDS = new Set(["0", "1", "2", "3", "ArrowRight", "j", "ArrowLeft", "k", "u", "n",
                            "l"]);

  function command(k) {
    if (k >= "0" && k <= "3" && k.length === 1) grade(+k, true);
    else if (k === "ArrowRight" || k === "j") go(cur + 1);
    else if (k === "ArrowLeft" || k === "k") go(cur - 1);
    else if (k === "u") undo();
    else if (k === "n") $("note").focus();
    else if (k === "l") { $("show-llm").checked = !showLLM; toggleLLM(); }
  }

  // Scroll to `box`, below the sticky header: on a phone the person is down at the grade
  // buttons when the finished panel, above the pair, appears.
  function intoView(box) {
    const header = document.querySelector("header").getBoundingClientRect().height;
    window.scrollTo(0, Math.max(0, box.getBoundingClientRect().top + window.scrollY - header - 8));
  }

  // The finished screen: what was done, and where the grades go next.
  async function summary() {
    let d;
    try { d = await api("api/summary"); } catch (err) { return; }
    renderSummary(d);
  }

  function renderSummary(d) {
    const box = $("summary");
    box.textContent = "";
    box.dataset.filled = "1";
    const facts = el("dl");
    const add = (term, value) => facts.append(el("dt", "", term), el("dd", "", value));
    add("graded", d.graded + " of " + d.total + " pairs" + (d.shared.pairs
      ? " (" + d.shared.graded + " shared with your team)" : ""));
    if (d.seconds.pairs) {
      add("time per pair", d.seconds.median.toFixed(1) + " s (median); " +
          Math.round(d.seconds.total / 60) + " min in all");
    }
    add("your grades", Object.entries(d.grades).map(([g, n]) => g + ": " + n).join(" · "));
    for (const j of d.llm) {
      add("agreement with " + j.judge, j.pairs + " pairs: same grade " +
          Math.round(100 * j.exact) + " %, within one " + Math.round(100 * j.within_1) +
          " %, weighted kappa " + (j.kappa_linear === null ? "undefined" :
          j.kappa_linear.toFixed(2)) + "; you saw its grade before grading " + j.seen +
          " of them");
    }
    box.append(facts);
    box.append(el("h2", "label", "next: from these grades to scores"));
    const steps = el("ol", "steps");
    for (const s of d.next) {
      const li = el("li", "", s.what);
      li.append(el("code", "", s.command));
      steps.append(li);
    }
    box.append(steps);
  }

  async function stop() {
    if (stopped) return;
    try {
      const d = await api("api/stop", {});
      stopped = true;
      renderSummary(d);
      $("finished-head").textContent = "The server has stopped: your " + d.graded +
        " grades are in the store. You can close this tab.";
      $("finished-more").hidden = true;
      for (const b of document.querySelectorAll("button")) b.disabled = true;
      setStatus("stopped", "The server has stopped.");
      $("finished").hidden = false;
    } catch (err) {
      failed = err.message;
      showStatus();
    }
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
    $("annotator").textContent = S.annotator + (S.adjudicating ? ", settling disagreements" : "");
    document.title = "reljudge assess: " + S.title;
    $("show-llm").parentElement.hidden = !S.llm;
    buildScale();
    document.addEventListener("keydown", onKey);
    $("note").addEventListener("focus", showMode);
    $("note").addEventListener("blur", showMode);
    showMode();
    $("prev").addEventListener("click", () => holding ? typed.push("k") : go(cur - 1));
    $("next").addEventListener("click", () => holding ? typed.push("j") : go(cur + 1));
    $("undo").addEventListener("click", () => holding ? typed.push("u") : undo());
    $("review").addEventListener("click", () => { if (!holding) go(0); });
    $("stop").addEventListener("click", stop);
    $("stop").hidden = !S.stoppable;
    if (S.adjudicating) document.body.classList.add("adjudicating");
    $("show-llm").addEventListener("change", toggleLLM);
    const done = Object.keys(grades).length;
    if (done) lastSaved = "Saved: your " + done + " grades so far are in the store";
    showStatus();
    const first = nextUngraded(S.items.length - 1);
    go(first === null ? 0 : first);
  }

  document.addEventListener("DOMContentLoaded", start);
})();
