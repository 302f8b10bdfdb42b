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
