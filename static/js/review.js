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
      say("Say why in the note (the reason is “other”), then press the key again.");
      note.focus();
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
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (warning && warning.open) {
      // While the warning is open only its own keys count: y approves anyway, Esc cancels.
      if (event.key === "y") { event.preventDefault(); approveAnyway(); }
      else if (event.key === "Escape") { event.preventDefault(); cancelWarning(); }
      return;
    }
    if (typing(event.target)) {
      if (event.key === "Escape") event.target.blur();
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
      case "n": note.focus(); break;
      default:
        if (/^[1-9]$/.test(event.key)) pick(event.key); else handled = false;
    }
    if (handled) event.preventDefault();
  });
  // Says the keys work now (the script is deferred): tests and assistive tools can wait for it.
  section.dataset.keys = "on";
})();
