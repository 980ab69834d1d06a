// The report's only script: side-list navigation and expand / collapse of evidence (inlined, no network).
(function () {
  function flash(id) {
    var el = document.getElementById(id);
    if (!el) return;
    el.scrollIntoView({behavior: "smooth", block: "start"});
    el.classList.add("flash");
    setTimeout(function () { el.classList.remove("flash"); }, 1500);
  }
  document.querySelectorAll("nav.side a[data-target]").forEach(function (a) {
    a.addEventListener("click", function (ev) {
      ev.preventDefault();
      var id = a.getAttribute("data-target");
      history.replaceState(null, "", "#" + id);
      flash(id);
    });
  });
  var button = document.getElementById("toggle-evidence");
  if (button) {
    button.addEventListener("click", function () {
      var open = button.getAttribute("data-open") !== "1";
      document.querySelectorAll("main details").forEach(function (d) { d.open = open; });
      button.setAttribute("data-open", open ? "1" : "0");
      button.textContent = open ? button.getAttribute("data-collapse") : button.getAttribute("data-expand");
    });
  }
})();
