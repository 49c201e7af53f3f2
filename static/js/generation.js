// Generation pages: a running generation run's progress, and the launch form's source-task fields.
(function () {
  "use strict";

  function show(box, data) {
    ["done", "total", "running", "queued", "kept", "status_label"].forEach(function (key) {
      var field = box.querySelector('[data-field="' + key + '"]');
      if (field) field.textContent = data[key];
    });
    var spent = box.querySelector('[data-field="spent_usd"]');
    if (spent) spent.textContent = "$" + Number(data.spent_usd).toFixed(4);
    box.querySelector('[data-field="bar"]').style.width = data.percent + "%";
  }

  function follow(box) {
    if (box.dataset.status !== "running") return;
    var done = box.dataset.done;
    VeriHarm.poll(box.dataset.progressUrl, 2000, function (data) {
      show(box, data);
      // Table 1, the endings and the searches are the server's: a search that ended, or the run's
      // end, reloads them.
      return data.status !== "running" || String(data.done) !== done;
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var box = document.getElementById("generation-progress");
    if (box) follow(box);
    var form = document.querySelector('[data-testid="generation-launch-form"]');
    if (form) VeriHarm.selectionFields(form);
  });
})();
