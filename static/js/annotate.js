// Keyboard labelling on the annotation item page (no build step, no dependencies).
// Y / N answer the highlighted question and move on; 1-3 pick a question (arrows still scroll);
// Enter submits once all three are answered; C goes to the comment, Esc leaves it; J / K move
// between the changes of the task, U switches the diff view, H goes to the harm test, S skips, F
// flags (Ctrl+Enter or Cmd+Enter sends the flag), G opens the guidelines, ? lists the keys.
// Single-key shortcuts can be turned off (WCAG 2.1.4), saved with the user's account. Active time (page visible, someone at it) is sent with the label.
(function () {
  "use strict";
  const form = document.getElementById("label-form");
  if (!form) return;
  const questions = Array.from(form.querySelectorAll("fieldset.criterion"));
  const comment = form.querySelector("#id_comment");
  const status = form.querySelector("#key-status");
  const preview = form.querySelector("#valid-preview");
  const seconds = form.querySelector("input[name=seconds_spent]");
  const closed = form.dataset.closed === "1";
  let current = 0;
  let submitting = false;

  // Active time only: a tab in the background, or a page nobody has touched for a minute (the
  // reader went for coffee), is not time spent on the item. Reading counts: scrolling and pointer
  // moves are activity too.
  const IDLE_MS = 60 * 1000;
  let activeMs = 0;
  let lastTick = performance.now();
  let lastActivity = lastTick;
  function tick() {
    const now = performance.now();
    if (!document.hidden) {
      // Time since the last tick counts up to the moment the reader went idle.
      const until = Math.min(now, lastActivity + IDLE_MS);
      if (until > lastTick) activeMs += until - lastTick;
    }
    lastTick = now;
  }
  function active() {
    tick();
    lastActivity = performance.now();
  }
  ["keydown", "pointermove", "pointerdown", "wheel", "scroll", "touchstart"].forEach(function (name) {
    document.addEventListener(name, active, { passive: true, capture: true });
  });
  document.addEventListener("visibilitychange", function () {
    tick();
    if (!document.hidden) lastActivity = performance.now();
  });
  function elapsedSeconds() {
    tick();
    return activeMs / 1000;
  }

  // Single-key shortcuts, on unless this user turned them off; the choice is saved with their
  // account, so it follows them to any browser.
  const keysToggle = document.getElementById("keys-enabled");
  const preferences = document.getElementById("preferences-form");
  const dialog = document.getElementById("keys-dialog");
  function keysOn() {
    return form.dataset.singleKeys !== "off";
  }
  function showKeysState() {
    if (keysToggle) keysToggle.checked = keysOn();
  }
  if (keysToggle && preferences) {
    keysToggle.addEventListener("change", function () {
      const wanted = keysToggle.checked ? "on" : "off";
      preferences.elements.single_key_shortcuts.value = wanted;
      form.dataset.singleKeys = wanted;
      fetch(preferences.action, { method: "POST", body: new FormData(preferences), credentials: "same-origin" })
        .then(function (response) {
          if (!response.ok) throw new Error(String(response.status));
          say("Single-key shortcuts " + wanted + ".");
          preferences.dataset.saved = wanted;
        })
        .catch(function () {
          say("Could not save the shortcut setting; it applies to this page only.");
        });
    });
  }
  function showKeys() {
    if (dialog && !dialog.open) dialog.showModal();
  }
  const keysButton = document.getElementById("show-keys");
  if (keysButton) keysButton.addEventListener("click", showKeys);
  const closeKeys = document.getElementById("close-keys");
  if (closeKeys) closeKeys.addEventListener("click", function () { dialog.close(); });

  // The changes of the task: the first row of each run of changed rows, in the view shown.
  const diff = document.getElementById("diff");
  const viewButton = document.getElementById("toggle-view");
  let change = -1;
  function changes() {
    if (!diff) return [];
    const view = diff.querySelector(diff.dataset.view === "unified" ? ".unified" : ".split");
    return Array.from(view.querySelectorAll("[data-change]")).filter(function (row) {
      const before = row.previousElementSibling;
      return !before || !before.hasAttribute("data-change");
    });
  }
  function jump(step) {
    const all = changes();
    if (!all.length) { say("The perturbed task is the same as the source."); return; }
    change = (change + step + all.length) % all.length;
    diff.querySelectorAll(".at-change").forEach(function (row) { row.classList.remove("at-change"); });
    const row = all[change];
    row.classList.add("at-change");
    row.scrollIntoView({ block: "center" });
    say("Change " + (change + 1) + " of " + all.length + ".");
  }
  function toggleView() {
    if (!diff) return;
    const unified = diff.dataset.view !== "unified";
    diff.dataset.view = unified ? "unified" : "split";
    diff.querySelector(".unified").hidden = !unified;
    diff.querySelector(".split").hidden = unified;
    viewButton.setAttribute("aria-pressed", unified ? "true" : "false");
    viewButton.firstChild.textContent = unified ? "Side-by-side view " : "Unified view ";
    change = -1;
  }
  const jumpButton = document.getElementById("jump-change");
  if (jumpButton) jumpButton.addEventListener("click", function () { jump(1); });
  if (viewButton) viewButton.addEventListener("click", toggleView);
  const skipForm = document.getElementById("skip-form");
  const skipButton = document.getElementById("skip-button");
  const flag = document.getElementById("flag");
  const flagReason = document.getElementById("flag-reason");
  if (skipForm) {
    skipForm.addEventListener("submit", function (event) {
      // A flag needs its reason; a plain skip does not.
      if (event.submitter && event.submitter.name === "unclear" && !flagReason.value.trim()) {
        event.preventDefault();
        say("Say what is unclear before flagging the item.");
        flagReason.focus();
      }
    });
  }
  const guidelines = document.getElementById("guidelines-link");
  // The harm test sits below a task that may run to hundreds of lines: one key brings it into view
  // and gives it the focus, so the page's keys go on working from there.
  const harmTest = document.getElementById("harm-test");
  function goToHarmTest() {
    if (!harmTest) return;
    harmTest.scrollIntoView({ block: "start" });
    harmTest.focus({ preventScroll: true });
    say("The harm test.");
  }
  const harmButton = document.getElementById("jump-harm-test");
  if (harmButton) harmButton.addEventListener("click", goToHarmTest);
  const flagButton = document.getElementById("flag-button");

  function answerOf(fieldset) {
    const checked = fieldset.querySelector("input[type=radio]:checked");
    return checked ? checked.value : null;
  }

  function say(text) {
    status.textContent = text;
  }

  function refresh() {
    questions.forEach(function (q, i) {
      q.classList.toggle("current", i === current);
      q.classList.toggle("answered", answerOf(q) !== null);
    });
    const answers = questions.map(answerOf);
    if (answers.some(function (a) { return a === null; })) {
      preview.textContent = "–";
      preview.className = "";
    } else {
      const valid = answers.every(function (a) { return a === "yes"; });
      preview.textContent = valid ? "✓ valid" : "✗ not valid";
      preview.className = valid ? "ans-yes" : "ans-no";
    }
  }

  function select(index) {
    current = Math.max(0, Math.min(questions.length - 1, index));
    refresh();
    questions[current].scrollIntoView({ block: "nearest" });
  }

  function answer(value) {
    const radio = questions[current].querySelector("input[value=" + value + "]");
    radio.checked = true;
    const key = questions[current].dataset.key.toUpperCase();
    say(key + ": " + (value === "yes" ? "yes" : "no"));
    if (current < questions.length - 1) current += 1;
    refresh();
  }

  function submit() {
    if (submitting || closed) return;
    const missing = questions.findIndex(function (q) { return answerOf(q) === null; });
    if (missing !== -1) {
      select(missing);
      say("Answer " + questions[missing].dataset.key.toUpperCase() + " first (Y or N).");
      return;
    }
    submitting = true;
    seconds.value = elapsedSeconds().toFixed(1);
    form.submit();
  }
  window.addEventListener("pageshow", function () { lastTick = lastActivity = performance.now(); });

  form.addEventListener("submit", function (event) {
    // A click on the button goes through the same checks as the Enter key.
    event.preventDefault();
    submit();
  });
  form.addEventListener("change", function (event) {
    const fieldset = event.target.closest("fieldset.criterion");
    if (fieldset) current = questions.indexOf(fieldset);
    refresh();
  });

  document.addEventListener("keydown", function (event) {
    if (event.altKey || (dialog && dialog.open)) return;
    // Ctrl+Enter, or Cmd+Enter on a Mac, sends what a text box belongs to; Enter alone is a newline.
    const send = event.key === "Enter" && (event.ctrlKey || event.metaKey);
    if (event.target === comment) {
      if (event.key === "Escape") {
        comment.blur();
        event.preventDefault();
      } else if (send) {
        event.preventDefault();
        submit();
      }
      return;
    }
    if (flagReason && event.target === flagReason) {
      if (event.key === "Escape") {
        flagReason.blur();
        event.preventDefault();
      } else if (send) {
        event.preventDefault();
        skipForm.requestSubmit(flagButton);  // through the form's check that a reason is given
      }
      return;
    }
    if (event.metaKey) return;
    const tag = event.target.tagName;
    if ((tag === "INPUT" && event.target.type !== "radio") || tag === "TEXTAREA" || tag === "SELECT") return;
    if (event.ctrlKey) return;
    if (event.key === "Enter") {
      if (closed || tag === "A" || (tag === "BUTTON" && event.target.type !== "submit") || tag === "SUMMARY") return;
      if (tag === "BUTTON" && !form.contains(event.target)) return;
      event.preventDefault();
      submit();
      return;
    }
    if (event.key.length !== 1 || !keysOn()) return;
    switch (event.key) {
      case "y": case "Y": if (closed) return; answer("yes"); break;
      case "n": case "N": if (closed) return; answer("no"); break;
      case "1": case "2": case "3": select(Number(event.key) - 1); break;
      case "c": case "C": if (closed) return; comment.focus(); break;
      case "j": case "J": jump(1); break;
      case "k": case "K": jump(-1); break;
      case "u": case "U": toggleView(); break;
      case "h": case "H": goToHarmTest(); break;
      case "s": case "S": if (!skipForm) return; skipForm.requestSubmit(skipButton); break;
      case "f": case "F":
        if (!flag) return;
        flag.open = true;
        flag.querySelector("textarea").focus();
        break;
      case "g": case "G": if (guidelines) window.location.assign(guidelines.href); break;
      case "?": showKeys(); break;
      default: return;
    }
    event.preventDefault();
  });

  const firstOpen = questions.findIndex(function (q) { return answerOf(q) === null; });
  current = firstOpen === -1 ? 0 : firstOpen;
  refresh();
  showKeysState();
  form.dataset.keys = "on";  // tells tests (and styles) that the keys work now
})();
