// The trial page's transcript: expand or fold every step of the page, and open the step a link points to.
(function () {
  "use strict";

  var list = document.querySelector("[data-testid=transcript]");
  if (!list) return;

  document.querySelectorAll("[data-steps]").forEach(function (button) {
    button.addEventListener("click", function () {
      var open = button.dataset.steps === "open";
      list.querySelectorAll("li > details").forEach(function (step) { step.open = open; });
    });
  });

  function openTarget() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    if (id.indexOf("step-") !== 0) return;
    var item = document.getElementById(id);
    if (!item) return;
    var step = item.querySelector("details");
    if (step) step.open = true;
    item.scrollIntoView({ block: "start" });
  }

  window.addEventListener("hashchange", openTarget);
  openTarget();
})();
