// Keyboard labelling on the annotation item page (no build step, no dependencies).
// Y / N answer the highlighted question and move on; 1-3 pick a question (arrows still scroll);
// Enter submits once all three are answered; C goes to the comment, Esc leaves it.
// The time the page is visible is measured and sent with the label.
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

  // Visible time only: a tab left in the background is not time spent on the item.
  let visibleMs = 0;
  let visibleSince = document.hidden ? null : performance.now();
  document.addEventListener("visibilitychange", function () {
    if (document.hidden && visibleSince !== null) {
      visibleMs += performance.now() - visibleSince;
      visibleSince = null;
    } else if (!document.hidden && visibleSince === null) {
      visibleSince = performance.now();
    }
  });
  function elapsedSeconds() {
    const running = visibleSince === null ? 0 : performance.now() - visibleSince;
    return (visibleMs + running) / 1000;
  }

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
    if (closed || event.altKey || event.metaKey) return;
    const inComment = event.target === comment;
    if (inComment) {
      if (event.key === "Escape") {
        comment.blur();
        event.preventDefault();
      } else if (event.key === "Enter" && event.ctrlKey) {
        event.preventDefault();
        submit();
      }
      return;
    }
    const tag = event.target.tagName;
    if (tag === "INPUT" && event.target.type !== "radio") return;
    if (event.ctrlKey) return;
    switch (event.key) {
      case "y": case "Y": answer("yes"); break;
      case "n": case "N": answer("no"); break;
      case "1": case "2": case "3": select(Number(event.key) - 1); break;
      case "Enter":
        if (tag === "A" || (tag === "BUTTON" && event.target.type !== "submit") || tag === "SUMMARY") return;
        submit();
        break;
      case "c": case "C": comment.focus(); break;
      default: return;
    }
    event.preventDefault();
  });

  const firstOpen = questions.findIndex(function (q) { return answerOf(q) === null; });
  current = firstOpen === -1 ? 0 : firstOpen;
  refresh();
  form.dataset.keys = "on";  // tells tests (and styles) that the keys work now
})();
