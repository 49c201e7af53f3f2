// Import job page: follow the job's progress until it ends, then show the server's rendering of the result.
(function () {
  "use strict";
  var box = document.getElementById("import-progress");
  if (!box) return;
  var active = function (status) { return status === "queued" || status === "running"; };
  if (!active(box.dataset.status)) return;
  var phases = { waiting: "Waiting for a worker", validating: "Checking lines", importing: "Importing" };

  function show(data) {
    box.querySelector("progress").value = data.percent;
    box.querySelector('[data-field="percent"]').textContent = data.percent;
    box.querySelector('[data-field="validated"]').textContent = data.validated_lines;
    box.querySelector('[data-field="imported"]').textContent = data.imported_records;
    box.querySelector('[data-field="phase"]').textContent = phases[data.phase] || data.status;
    box.dataset.status = data.status;
  }

  VeriHarm.poll(box.dataset.statusUrl, 500, function (data) {
    show(data);
    return !active(data.status);
  });
})();
