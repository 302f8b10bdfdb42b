// The console's own script, loaded from its origin (the CSP allows no inline script).
// Copy buttons: <button data-copy="ID of a read-only input">.
"use strict";

document.addEventListener("click", async (event) => {
  const button = event.target.closest("button[data-copy]");
  if (!button) return;
  const field = document.getElementById(button.dataset.copy);
  const status = document.getElementById("copy-status");
  let copied = false;
  try {
    await navigator.clipboard.writeText(field.value);
    copied = true;
  } catch (error) {
    // No clipboard API outside a secure context (plain HTTP to a host name): select it for the user instead.
    field.select();
    copied = document.execCommand && document.execCommand("copy");
  }
  if (status) status.textContent = copied ? "Copied to the clipboard." : "Selected: press Ctrl+C (or Cmd+C) to copy.";
});

// The live connector table: <table data-live-stream="URL"> follows the server-sent events at URL. Each
// `row` event is one <tr> rendered by the server (escaped there), replacing the row with the same id if this
// page shows it; `resync` means the stream fell behind, so the page is read again; `end` that the operator
// signed out (reading the page again leads to the sign-in page).
function followLiveTable(table) {
  const state = document.getElementById("live-state");
  const say = (text) => { if (state && state.textContent !== text) state.textContent = text; };
  const source = new EventSource(table.dataset.liveStream);
  source.addEventListener("open", () => say("Live updates: on."));
  source.addEventListener("error", () => {
    say(source.readyState === EventSource.CLOSED
      ? "Live updates stopped: reload the page."
      : "Live updates interrupted: reconnecting…");
  });
  source.addEventListener("row", (event) => {
    const template = document.createElement("template");
    template.innerHTML = event.data.trim();
    const fresh = template.content.querySelector("tr[id]");
    const current = fresh && document.getElementById(fresh.id);
    if (current && table.contains(current)) current.replaceWith(fresh);
  });
  const reload = () => { source.close(); window.location.reload(); };
  source.addEventListener("resync", reload);
  source.addEventListener("end", reload);
}

document.addEventListener("DOMContentLoaded", () => {
  const table = document.querySelector("table[data-live-stream]");
  if (table && "EventSource" in window) followLiveTable(table);
});
