// Keyboard review: the page works without this script (a form with two submit buttons);
// the keys only pick a reason and press the buttons, so the server checks every decision.
(function () {
  "use strict";
  var section = document.getElementById("review");
  var form = document.getElementById("decision-form");
  if (!section || !form) return;
  var message = form.querySelector("[data-testid=review-message]");
  var note = form.querySelector("textarea[name=note]");
  var submitted = false;
  // The decision a key asked for when the note still had to be written ("other" needs one):
  // Ctrl/Cmd+Enter in the note then makes it.
  var pendingVerdict = null;
  // The shortcut key that moved focus into the note: its own character must not land there.
  var openerKey = null;
  // A flagged candidate (its tests failed their reference check): approving it first shows the
  // warning in a dialog; confirming ticks the form's acknowledgement, which the server requires.
  var warning = document.getElementById("flag-warning");
  var acknowledge = form.querySelector("input[name=acknowledge_flags]");
  if (warning && acknowledge) acknowledge.closest("label").hidden = true;

  function say(text) { message.textContent = text; }

  function selectedReason() {
    var checked = form.querySelector("input[name=reason]:checked");
    return checked ? checked.closest("label.reason") : null;
  }

  function pick(key) {
    var input = form.querySelector("input[name=reason][data-key='" + key + "']");
    if (!input) return;
    input.checked = true;
    pendingVerdict = null;
    say("Reason: " + input.closest("label.reason").textContent.replace(/\s+/g, " ").trim());
  }

  function needsWarning() {
    return section.dataset.flagged === "1" && warning && acknowledge && !acknowledge.checked;
  }

  function warn() {
    if (!warning.open) warning.showModal();
    warning.querySelector("[data-testid=confirm-approve]").focus();
  }

  function approveAnyway() {
    acknowledge.checked = true;
    warning.close();
    decide("approve");
  }

  function cancelWarning() {
    if (warning.open) warning.close();
    say("Not approved: the candidate is flagged. Press a again to read the warning, or decide otherwise.");
  }

  function needsNote(label) {
    return label && label.querySelector("input").value === "other" && !note.value.trim();
  }

  function decide(verdict) {
    var label = selectedReason();
    if (verdict === "approve" && !label) {
      // Approving without a reason means the usual one: valid.
      form.querySelector("input[name=reason][value=valid]").checked = true;
      label = selectedReason();
    }
    if (!label || label.dataset[verdict] !== "1") {
      var keys = Array.prototype.filter.call(form.querySelectorAll("label.reason"), function (l) {
        return l.dataset[verdict] === "1";
      }).map(function (l) { return l.querySelector("input").dataset.key; });
      say((label ? "That reason does not fit “" + verdict + "”. " : "") + "Pick a reason to " + verdict + " first: " + keys.join(", ") + ".");
      return;
    }
    if (needsNote(label)) {
      say("Say why in the note (the reason is “other”), then press Ctrl+Enter (or Esc and the key again).");
      pendingVerdict = verdict;
      openNote(verdict === "approve" ? "a" : "r");
      return;
    }
    if (verdict === "approve" && needsWarning()) {
      warn();
      return;
    }
    if (submitted) return;
    submitted = true;
    var button = form.querySelector("button[value=" + verdict + "]");
    if (form.requestSubmit) form.requestSubmit(button); else button.click();
  }

  function go(url) { if (url) window.location.href = url; }

  function openNote(key) {
    openerKey = key;
    note.focus();
  }

  // The verdict Ctrl/Cmd+Enter makes from the note: the one that asked for the note, else the only
  // one the picked reason allows.
  function verdictFromNote() {
    if (pendingVerdict) return pendingVerdict;
    var label = selectedReason();
    if (!label) return null;
    if (label.dataset.approve === "1" && label.dataset.reject !== "1") return "approve";
    if (label.dataset.reject === "1" && label.dataset.approve !== "1") return "reject";
    return null;
  }

  // The key that opened the note is still down: its keypress and text input would type it there.
  note.addEventListener("keypress", function (event) {
    if (openerKey && event.key === openerKey) event.preventDefault();
  });
  note.addEventListener("beforeinput", function (event) {
    if (openerKey && event.data === openerKey) event.preventDefault();
  });
  document.addEventListener("keyup", function (event) {
    if (event.key === openerKey) openerKey = null;
  });

  function typing(target) {
    if (target.isContentEditable) return true;
    var tag = target.tagName;
    if (tag === "TEXTAREA" || tag === "SELECT") return true;
    return tag === "INPUT" && target.type !== "radio" && target.type !== "checkbox";
  }

  form.addEventListener("submit", function (event) {
    // The Approve button pressed with the mouse: the warning comes first there too.
    if (event.submitter && event.submitter.value === "approve" && needsWarning()) {
      event.preventDefault();
      submitted = false;
      warn();
      return;
    }
    submitted = true;
  });

  if (warning) {
    warning.querySelector("[data-testid=confirm-approve]").addEventListener("click", approveAnyway);
    warning.querySelector("[data-testid=cancel-approve]").addEventListener("click", cancelWarning);
    // Esc closes a modal dialog by itself; say so rather than leave the curator guessing.
    warning.addEventListener("cancel", function (event) { event.preventDefault(); cancelWarning(); });
  }

  document.addEventListener("keydown", function (event) {
    if (event.target === note && event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      var verdict = verdictFromNote();
      if (verdict) decide(verdict);
      else say("Pick a reason (Esc leaves the note, then 1–5), then press a or r.");
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (warning && warning.open) {
      // While the warning is open only its own keys count: y approves anyway, Esc cancels.
      if (event.key === "y") { event.preventDefault(); approveAnyway(); }
      else if (event.key === "Escape") { event.preventDefault(); cancelWarning(); }
      return;
    }
    if (typing(event.target)) {
      // Typing in a field: single keys are text, never shortcuts; Escape leaves the field.
      if (event.key === "Escape") event.target.blur();
      else if (event.key === openerKey) event.preventDefault();
      return;
    }
    var data = section.dataset;
    var handled = true;
    switch (event.key) {
      case "a": decide("approve"); break;
      case "r": decide("reject"); break;
      case "j": go(data.nextUrl); break;
      case "k": go(data.previousUrl); break;
      case "u": go(data.nextUndecidedUrl); break;
      case "e": go(data.editUrl); break;
      case "q": go(data.queueUrl); break;
      case "n": openNote("n"); break;
      default:
        if (/^[1-9]$/.test(event.key)) pick(event.key); else handled = false;
    }
    if (handled) event.preventDefault();
  });
  // Says the keys work now (the script is deferred): tests and assistive tools can wait for it.
  section.dataset.keys = "on";
})();
