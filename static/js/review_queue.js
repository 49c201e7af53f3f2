// The review queue's bulk form: "select all on this page" and a count of the ticked rows. The
// form works without it (tick rows one by one); the server confirms and checks every batch.
(function () {
  "use strict";
  var form = document.getElementById("bulk-decision");
  var all = document.getElementById("select-page");
  if (!form || !all) return;
  var count = form.querySelector("[data-testid=bulk-count]");
  function rows() { return form.querySelectorAll("tbody input[name=candidates]"); }
  function update() {
    var ticked = Array.prototype.filter.call(rows(), function (box) { return box.checked; }).length;
    count.textContent = ticked ? ticked + " ticked" : "";
    all.checked = ticked > 0 && ticked === rows().length;
    all.indeterminate = ticked > 0 && ticked < rows().length;
  }
  all.addEventListener("change", function () {
    rows().forEach(function (box) { box.checked = all.checked; });
    update();
  });
  form.addEventListener("change", function (event) {
    if (event.target.name === "candidates") update();
  });
  update();
  form.dataset.selectPage = "on";
})();
