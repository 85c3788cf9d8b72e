// sepp admin UI: the little JavaScript the pages use. Everything works
// without it; it only makes selecting rows in a list pleasant.
"use strict";

document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("form[data-selectable]").forEach(function (form) {
    var boxes = Array.prototype.slice.call(form.querySelectorAll('input[type="checkbox"][name="id"]'));
    var all = form.querySelector("[data-select-all]");
    var count = form.querySelector("[data-selcount]");
    var buttons = form.querySelectorAll("[data-needs-selection]");

    function update() {
      var n = boxes.filter(function (b) { return b.checked; }).length;
      if (count) {
        count.textContent = n === 0 ? "Select rows to act on" : n + " selected";
      }
      buttons.forEach(function (b) { b.disabled = n === 0; });
      if (all) {
        all.checked = n > 0 && n === boxes.length;
        all.indeterminate = n > 0 && n < boxes.length;
      }
      boxes.forEach(function (b) {
        var row = b.closest("tr");
        if (row) { row.classList.toggle("selected", b.checked); }
      });
    }

    if (all) {
      all.addEventListener("change", function () {
        boxes.forEach(function (b) { b.checked = all.checked; });
        update();
      });
    }
    form.addEventListener("change", update);

    // A click anywhere on a row, outside its links and inputs, toggles it.
    boxes.forEach(function (b) {
      var row = b.closest("tr");
      if (!row) { return; }
      row.addEventListener("click", function (ev) {
        if (ev.target.closest("a, input, button, label")) { return; }
        b.checked = !b.checked;
        update();
      });
    });
    update();
  });
});

// Auto-refresh: a checkbox on the overview and queue pages reloads the page
// every data-refresh seconds while ticked; the choice is remembered.
document.addEventListener("DOMContentLoaded", function () {
  var box = document.getElementById("auto-refresh");
  if (!box) { return; }
  var key = "sepp.autoRefresh";
  var secs = parseInt(box.getAttribute("data-refresh"), 10) || 10;
  var timer = null;
  function arm() {
    if (timer) { clearTimeout(timer); timer = null; }
    if (box.checked) {
      timer = setTimeout(function () { window.location.reload(); }, secs * 1000);
    }
  }
  try { box.checked = window.localStorage.getItem(key) === "on"; } catch (e) { /* storage off */ }
  box.addEventListener("change", function () {
    try { window.localStorage.setItem(key, box.checked ? "on" : "off"); } catch (e) { /* storage off */ }
    arm();
  });
  arm();
});
