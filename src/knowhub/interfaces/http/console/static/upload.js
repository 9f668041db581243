// The upload page's enhancement: drag and drop (files or whole folders), a bar per file while
// the body is sent, then per-file ingest states polled from GET /ui/upload/{job}.
// Without this script the form posts normally and the server answers with the result page.
"use strict";

(function () {
  const form = document.getElementById("upload-form");
  if (!form) return;
  const zone = document.getElementById("dropzone");
  const chosen = document.getElementById("chosen");
  const out = document.getElementById("upload-progress");
  const button = document.getElementById("upload-button");
  let dropped = []; // [File, name] pairs from drag and drop

  function picked() {
    const all = [];
    for (const id of ["files", "folder"]) {
      for (const f of document.getElementById(id).files) all.push([f, f.webkitRelativePath || f.name]);
    }
    return all.concat(dropped);
  }

  function showChosen() {
    chosen.replaceChildren();
    for (const [f, name] of picked()) {
      const li = document.createElement("li");
      li.textContent = name + " (" + f.size.toLocaleString() + " bytes)";
      chosen.append(li);
    }
  }

  // A dropped folder is walked with the FileSystem entries API (readEntries gives ≤100 at a time).
  function walk(entry, prefix) {
    if (entry.isFile) {
      return new Promise((ok, fail) => entry.file((f) => ok([[f, prefix + f.name]]), fail));
    }
    const reader = entry.createReader();
    const found = [];
    return new Promise((ok, fail) => {
      const more = () =>
        reader.readEntries((batch) => {
          if (!batch.length) return Promise.all(found).then((lists) => ok(lists.flat()), fail);
          for (const e of batch) found.push(walk(e, prefix + entry.name + "/"));
          more();
        }, fail);
      more();
    });
  }

  zone.addEventListener("dragover", (e) => { e.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (e) => {
    e.preventDefault();
    zone.classList.remove("over");
    const entries = [...e.dataTransfer.items].map((i) => i.webkitGetAsEntry()).filter(Boolean);
    Promise.all(entries.map((en) => walk(en, ""))).then((lists) => {
      dropped = dropped.concat(lists.flat());
      showChosen();
    });
  });
  for (const id of ["files", "folder"]) document.getElementById(id).addEventListener("change", showChosen);

  function row(name) {
    const li = document.createElement("li");
    li.className = "file queued";
    const n = document.createElement("span"); n.className = "name"; n.textContent = name;
    const s = document.createElement("span"); s.className = "state"; s.textContent = "sending";
    const bar = document.createElement("progress"); bar.max = 1; bar.value = 0;
    const why = document.createElement("span"); why.className = "reason";
    li.append(n, s, bar, why);
    return li;
  }

  function update(li, f) {
    li.className = "file " + f.state;
    li.dataset.state = f.state;
    li.querySelector(".state").textContent = f.state;
    li.querySelector("progress").value = f.fraction;
    li.querySelector(".reason").textContent = f.reason || "";
  }

  function fail(message) {
    const div = document.createElement("div");
    div.className = "error"; div.setAttribute("role", "alert"); div.id = "upload-error";
    div.textContent = message;
    out.prepend(div);
    button.disabled = false;
  }

  // Why a post failed: the console's error page says it in its alert, the guard in JSON.
  function reason(xhr) {
    try {
      return JSON.parse(xhr.responseText).error || xhr.statusText;
    } catch (_) {
      const page = new DOMParser().parseFromString(xhr.responseText, "text/html");
      const alert = page.querySelector("[role=alert]");
      return alert ? alert.textContent : xhr.statusText;
    }
  }

  function poll(url, list, done) {
    fetch(url, { headers: { Accept: "application/json" } })
      .then((r) => (r.ok ? r.json() : Promise.reject(new Error("status " + r.status))))
      .then((job) => {
        list.replaceChildren();
        for (const f of job.files) { const li = row(f.name); update(li, f); list.append(li); }
        if (job.error) fail(job.error);
        if (job.finished) return done(job);
        setTimeout(() => poll(url, list, done), 400);
      })
      .catch((err) => fail("lost track of the upload (" + err.message + "): reload the documents page"));
  }

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const files = picked();
    out.replaceChildren();
    if (!files.length) return fail("choose or drop at least one file");
    const body = new FormData();
    for (const key of ["collection", "new_collection", "tags"]) body.append(key, form.elements[key].value);
    for (const [f, name] of files) body.append("files", f, name);
    const list = document.createElement("ul"); list.className = "files"; list.id = "upload-files";
    const rows = files.map(([f, name]) => { const li = row(name); list.append(li); return [f, li]; });
    out.append(list);
    button.disabled = true;
    const xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    xhr.setRequestHeader("Accept", "application/json");
    xhr.upload.onprogress = (p) => { // each file's share of the bytes sent so far
      let before = 0;
      for (const [f, li] of rows) {
        const sent = Math.min(Math.max(p.loaded - before, 0), f.size);
        li.querySelector("progress").value = f.size ? (0.1 * sent) / f.size : 0.1;
        before += f.size;
      }
    };
    xhr.onload = () => {
      if (xhr.status === 202) {
        const job = JSON.parse(xhr.responseText);
        return poll(job.url, list, (done) => {
          button.disabled = false;
          if (done.summary) { // what did not go in, by type: a page of red rows is hard to count
            const s = document.createElement("p");
            s.id = "upload-summary"; s.className = "summary"; s.textContent = done.summary;
            out.append(s);
          }
          const a = document.createElement("a");
          a.href = "/ui/documents?collection=" + encodeURIComponent(done.collection);
          a.textContent = "See the documents of " + done.collection;
          a.id = "upload-done";
          const p = document.createElement("p"); p.append(a); out.append(p);
        });
      }
      fail("upload refused (" + xhr.status + "): " + reason(xhr));
    };
    xhr.onerror = () => fail("the upload could not be sent: is the server running?");
    xhr.send(body);
  });
})();
