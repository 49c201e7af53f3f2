// Evaluation pages: live progress of a run, and the launch form's candidate-selection fields.
(function () {
  "use strict";

  function duration(seconds) {
    if (seconds === null || seconds === undefined) return "–";
    seconds = Math.round(seconds);
    var h = Math.floor(seconds / 3600), m = Math.floor((seconds % 3600) / 60), s = seconds % 60;
    return (h ? h + "h " : "") + (h || m ? m + "m " : "") + s + "s";
  }

  function showProgress(box, data) {
    ["done", "running", "queued", "unresolved", "cancelled", "total", "status"].forEach(function (key) {
      var field = box.querySelector('[data-field="' + key + '"]');
      if (field) field.textContent = data[key];
    });
    box.querySelector('[data-field="elapsed"]').textContent = duration(data.elapsed_seconds);
    box.querySelector('[data-field="eta"]').textContent = data.eta_seconds === null ? "–" : duration(data.eta_seconds);
    box.querySelector('[data-field="bar"]').style.width = data.percent + "%";
    box.dataset.status = data.status;
  }

  function pollProgress(box) {
    var initial = document.getElementById("progress-data");
    var before = initial ? JSON.parse(initial.textContent) : null;
    if (before) showProgress(box, before);
    var active = function (status) { return status === "queued" || status === "running" || status === "cancelling"; };
    if (!before || !active(before.status)) return;
    var timer = setInterval(function () {
      fetch(box.dataset.progressUrl, { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then(function (response) { return response.ok ? response.json() : Promise.reject(response.status); })
        .then(function (data) {
          showProgress(box, data);
          if (!active(data.status)) {
            clearInterval(timer);
            // The trial table and metrics are rendered by the server: show their final state.
            window.location.reload();
          }
        })
        .catch(function () { /* a missed poll is retried at the next tick */ });
    }, 2000);
  }

  function selectionFields(form) {
    var radios = form.querySelectorAll('input[name="selection_kind"]');
    function update() {
      var chosen = form.querySelector('input[name="selection_kind"]:checked');
      var kind = chosen ? chosen.value : "ids";
      form.querySelectorAll("[data-selection]").forEach(function (block) {
        block.hidden = block.dataset.selection.split(" ").indexOf(kind) === -1;
      });
    }
    radios.forEach(function (radio) { radio.addEventListener("change", update); });
    update();
  }

  document.addEventListener("DOMContentLoaded", function () {
    var box = document.getElementById("progress");
    if (box) pollProgress(box);
    var form = document.querySelector('[data-testid="launch-form"]');
    if (form) selectionFields(form);
  });
})();
