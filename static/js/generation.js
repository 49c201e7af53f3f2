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
    Object.keys(data.endings || {}).forEach(function (ending) {
      var cell = box.querySelector('[data-ending="' + ending + '"]');
      if (!cell) return;
      cell.textContent = data.endings[ending];
      cell.parentElement.classList.toggle("sub", !data.endings[ending]);
    });
    // Table 1, the rollouts and the searches are the server's, read a page at a time: a search that
    // ends says so here rather than reloading them (a run of thousands would be re-read every
    // few seconds).
    var since = data.done - Number(box.dataset.done);
    var notice = box.querySelector('[data-testid="ended-since"]');
    if (notice && since > 0) {
      notice.querySelector('[data-field="ended_since"]').textContent = since;
      notice.hidden = false;
    }
  }

  function follow(box) {
    if (box.dataset.status !== "running") return;
    VeriHarm.poll(box.dataset.progressUrl, 2000, function (data) {
      show(box, data);
      // The run's end reloads the page once, for its final tables.
      return data.status !== "running";
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var box = document.getElementById("generation-progress");
    if (box) follow(box);
    var form = document.querySelector('[data-testid="generation-launch-form"]');
    if (form) VeriHarm.selectionFields(form);
  });
})();
