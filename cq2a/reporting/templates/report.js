(function () {
  "use strict";
  var kindFilter = document.getElementById("kind-filter");
  var search = document.getElementById("bug-search");
  var counter = document.getElementById("visible-count");
  var rows = Array.prototype.slice.call(document.querySelectorAll("#bugs tr.bug-row"));

  function applyFilters() {
    var kind = kindFilter ? kindFilter.value : "";
    var needle = search ? search.value.trim().toLowerCase() : "";
    var shown = 0;
    rows.forEach(function (row) {
      var visible = (!kind || row.getAttribute("data-kind") === kind) &&
        (!needle || row.getAttribute("data-text").indexOf(needle) !== -1);
      row.hidden = !visible;
      if (visible) { shown += 1; }
    });
    if (counter) { counter.textContent = String(shown); }
  }

  // A link may preset the filters: report.html#kind=relation&q=paris
  var preset = new URLSearchParams(window.location.hash.slice(1));
  if (kindFilter && preset.has("kind")) { kindFilter.value = preset.get("kind"); }
  if (search && preset.has("q")) { search.value = preset.get("q"); }
  if (kindFilter) { kindFilter.addEventListener("change", applyFilters); }
  if (search) { search.addEventListener("input", applyFilters); }
  applyFilters();
  document.body.setAttribute("data-ready", "1");
})();
