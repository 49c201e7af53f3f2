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
    VeriHarm.poll(box.dataset.progressUrl, 2000, function (data) {
      showProgress(box, data);
      // The trial table and metrics are rendered by the server: show their final state.
      return !active(data.status);
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var box = document.getElementById("progress");
    if (box) pollProgress(box);
    var form = document.querySelector('[data-testid="launch-form"]');
    if (form) VeriHarm.selectionFields(form);
  });
})();
