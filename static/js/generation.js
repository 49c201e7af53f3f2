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
    var timer = setInterval(function () {
      fetch(box.dataset.progressUrl, { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then(function (response) { return response.ok ? response.json() : Promise.reject(response.status); })
        .then(function (data) {
          show(box, data);
          // Table 1, the endings and the searches are the server's: a search that ended, or the
          // run's end, reloads them.
          if (data.status !== "running" || String(data.done) !== done) {
            clearInterval(timer);
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
    var box = document.getElementById("generation-progress");
    if (box) follow(box);
    var form = document.querySelector('[data-testid="generation-launch-form"]');
    if (form) selectionFields(form);
  });
})();
