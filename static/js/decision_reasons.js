// Decision forms offer only the reasons that fit the chosen verdict. Without this script every
// reason is listed, marked with the verdicts it fits, and the server refuses a mismatch.
(function () {
  "use strict";
  function verdictOf(form) {
    var checked = form.querySelector("input[name=verdict]:checked");
    if (checked) return checked.value;
    var select = form.querySelector("select[name=verdict]");
    return select ? select.value : "";
  }

  function follow(form) {
    var verdict = verdictOf(form);
    form.querySelectorAll("label.reason").forEach(function (label) {
      var fits = !verdict || label.dataset[verdict] === "1";
      label.hidden = !fits;
      var input = label.querySelector("input");
      if (!fits && input.checked) input.checked = false;
    });
    form.querySelectorAll("select[name=reason] option").forEach(function (option) {
      if (!option.value) return;
      var fits = !verdict || option.dataset[verdict] === "1";
      option.hidden = !fits;
      option.disabled = !fits;
      if (!fits && option.selected) option.parentElement.value = "";
    });
  }

  document.querySelectorAll("form[data-reasons-follow-verdict]").forEach(function (form) {
    form.querySelectorAll("[name=verdict]").forEach(function (input) {
      input.addEventListener("change", function () { follow(form); });
    });
    follow(form);
    form.dataset.reasonsFollow = "on";
  });
})();
