// Following a background job's progress: poll its JSON every `everyMs` and hand each answer to
// `onData`; when that returns true the job is over for this page, which reloads to show the server's
// rendering of the result. A missed poll (network, a restart) is retried at the next tick.
window.VeriHarm = window.VeriHarm || {};
window.VeriHarm.poll = function (url, everyMs, onData) {
  "use strict";
  var timer = setInterval(function () {
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.json() : Promise.reject(response.status); })
      .then(function (data) {
        if (onData(data)) {
          clearInterval(timer);
          window.location.reload();
        }
      })
      .catch(function () { /* retried at the next tick */ });
  }, everyMs);
};

// A launch form's selection: only the fields of the chosen kind (radio `selection_kind`) show.
window.VeriHarm.selectionFields = function (form) {
  "use strict";
  function update() {
    var chosen = form.querySelector('input[name="selection_kind"]:checked');
    var kind = chosen ? chosen.value : "ids";
    form.querySelectorAll("[data-selection]").forEach(function (block) {
      block.hidden = block.dataset.selection.split(" ").indexOf(kind) === -1;
    });
  }
  form.querySelectorAll('input[name="selection_kind"]').forEach(function (radio) {
    radio.addEventListener("change", update);
  });
  update();
};
